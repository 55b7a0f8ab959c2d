package announce

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/sdk/refusal"
)

const (
	profileRO  = `{"kind":"read_only","destructive":false,"effect_scope":"open","idempotency":"intrinsic","reconciliation":"none"}`
	profileW   = `{"kind":"write","destructive":false,"effect_scope":"closed","idempotency":"none","reconciliation":"lookup"}`
	specAnnDoc = `{"tools": [
   {"name": "screenshot",
    "effect_profile": {"kind": "read_only", "destructive": false, "effect_scope": "open",
                       "idempotency": "intrinsic", "reconciliation": "none"},
    "timeout_ms": 120000,
    "description": "Capture a web page as PNG.",
    "input_schema": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}},
   {"name": "skill",
    "effect_profile": {"kind": "read_only", "destructive": false, "effect_scope": "closed",
                       "idempotency": "intrinsic", "reconciliation": "none"}}
 ],
 "environment": {"os": "linux", "cwd": "/home/me/site"},
 "documents": [{"name": "deploy-guide", "description": "How to deploy the site."}]}`
)

// tool returns one tool entry with the read-only profile and the extra members given.
func tool(name string, extra ...string) string {
	parts := append([]string{`"name":` + jsonQuote(name), `"effect_profile":` + profileRO}, extra...)
	return "{" + strings.Join(parts, ",") + "}"
}

func jsonQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func body(tools ...string) string { return `{"tools":[` + strings.Join(tools, ",") + `]}` }

// problemsOf returns the refusal's list as {code, path, name} items for comparison.
func problemsOf(r *refusal.Refusal) []refusal.Problem {
	if r == nil {
		return nil
	}
	out := make([]refusal.Problem, len(r.Errors))
	for i, p := range r.Errors {
		out[i] = refusal.Problem{Code: p.Code, Path: p.Path, Name: p.Name}
	}
	return out
}

func TestParseAnnouncementSpecExample(t *testing.T) {
	t.Parallel()
	a, r := ParseAnnouncement([]byte(specAnnDoc))
	if r != nil {
		t.Fatalf("refused: %+v", r)
	}
	got, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	// The stored form: entries in the executor read's key order, raw JSON compacted as sent.
	want := `{"tools":[` +
		`{"name":"screenshot","description":"Capture a web page as PNG.","input_schema":{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]},` +
		`"effect_profile":{"kind":"read_only","destructive":false,"effect_scope":"open","idempotency":"intrinsic","reconciliation":"none"},"timeout_ms":120000},` +
		`{"name":"skill","effect_profile":{"kind":"read_only","destructive":false,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"}}],` +
		`"environment":{"os":"linux","cwd":"/home/me/site"},` +
		`"documents":[{"name":"deploy-guide","description":"How to deploy the site."}]}`
	if string(got) != want {
		t.Errorf("stored announcement\n got %s\nwant %s", got, want)
	}
	if !a.Tools[0].ModelFacing() || a.Tools[1].ModelFacing() {
		t.Errorf("ModelFacing = %v, %v; want true, false", a.Tools[0].ModelFacing(), a.Tools[1].ModelFacing())
	}
	if r := Validate(a); r != nil {
		t.Errorf("Validate refuses what ParseAnnouncement accepted: %+v", r)
	}
}

func TestParseAnnouncementDefaults(t *testing.T) {
	t.Parallel()
	a, r := ParseAnnouncement([]byte(`{"tools":[]}`))
	if r != nil {
		t.Fatalf("refused: %+v", r)
	}
	got, _ := json.Marshal(a)
	// An omitted environment stores {}, omitted documents store [], and [] clears the tools.
	if want := `{"tools":[],"environment":{},"documents":[]}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestParseAnnouncementRequestWords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		code, path string
		status     int
	}{
		{"over the body bound", `{"tools":[],"environment":{"x":"` + strings.Repeat("a", MaxBodyBytes) + `"}}`, CodeContentTooLarge, "", 413},
		{"not utf-8", "{\"tools\":[],\"environment\":{\"x\":\"\xff\"}}", CodeParameterInvalid, "", 400},
		{"not json", `{"tools":`, CodeParameterInvalid, "", 400},
		{"array root", `[]`, CodeParameterInvalid, "", 400},
		{"string root", `"tools"`, CodeParameterInvalid, "", 400},
		{"trailing value", `{"tools":[]} {}`, CodeParameterInvalid, "", 400},
		{"empty body", ``, CodeParameterMissing, "tools", 400},
		{"blank body", " \n", CodeParameterMissing, "tools", 400},
		{"no tools", `{}`, CodeParameterMissing, "tools", 400},
		{"null tools", `{"tools":null,"documents":[]}`, CodeParameterMissing, "tools", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, r := ParseAnnouncement([]byte(tt.body))
			if r == nil {
				t.Fatalf("accepted: %+v", a)
			}
			if r.Code != tt.code || pathOf(r) != tt.path || status(r) != tt.status {
				t.Errorf("refusal = %s at %q (%d), want %s at %q (%d)", r.Code, pathOf(r), status(r), tt.code, tt.path, tt.status)
			}
			// A body that is no announcement at all (400, 413) lists no errors: only a 422 does.
			if len(r.Errors) != 0 {
				t.Errorf("errors = %+v", r.Errors)
			}
		})
	}
}

func TestParseAnnouncementBounds(t *testing.T) {
	t.Parallel()
	many := func(n int, item string) string {
		items := make([]string, n)
		for i := range items {
			items[i] = fmt.Sprintf(item, i)
		}
		return strings.Join(items, ",")
	}
	// A canonical-JSON value of exactly n bytes: {"x":"aaa…"} is 8 bytes plus the string.
	objectOf := func(n int) string { return `{"x": "` + strings.Repeat("a", n-8) + `"}` }
	desc := func(n int) string { return `"description":"` + strings.Repeat("d", n) + `"` }
	schema := func(n int) string {
		// {"type":"object","x":"…"} is 24 bytes of canonical JSON plus the string.
		return `"input_schema":{"x":"` + strings.Repeat("s", n-24) + `", "type": "object"}`
	}
	doc := `{"name":"d%d","description":"x"}`
	tests := []struct {
		name, body string
		want       []refusal.Problem
	}{
		{"512 tools", `{"tools":[` + many(MaxTools, `{"name":"t%d","effect_profile":`+profileRO+`}`) + `]}`, nil},
		{"513 tools", `{"tools":[` + many(MaxTools+1, `{"name":"t%d","effect_profile":`+profileRO+`}`) + `]}`,
			[]refusal.Problem{{Code: CodeValidationFailed, Path: "tools"}}},
		{"256 documents", `{"tools":[],"documents":[` + many(MaxDocuments, doc) + `]}`, nil},
		{"257 documents", `{"tools":[],"documents":[` + many(MaxDocuments+1, doc) + `]}`,
			[]refusal.Problem{{Code: CodeValidationFailed, Path: "documents"}}},
		{"environment at the bound", `{"tools":[],"environment":` + objectOf(MaxEnvironmentBytes) + `}`, nil},
		{"environment over", `{"tools":[],"environment":` + objectOf(MaxEnvironmentBytes+1) + `}`,
			[]refusal.Problem{{Code: CodeValidationFailed, Path: "environment"}}},
		{"description at the bound", body(tool("a", desc(MaxDescriptionBytes))), nil},
		{"description over", body(tool("a", desc(MaxDescriptionBytes+1))),
			[]refusal.Problem{{Code: CodeValidationFailed, Path: "tools[0].description"}}},
		{"input schema at the bound", body(tool("a", schema(MaxInputSchemaBytes))), nil},
		{"input schema over", body(tool("a", schema(MaxInputSchemaBytes+1))),
			[]refusal.Problem{{Code: CodeValidationFailed, Path: "tools[0].input_schema"}}},
		{
			// Every bound failure is listed in document order, and no entry is checked.
			"all bounds at once",
			`{"documents":[` + many(MaxDocuments+1, doc) + `],"environment":` + objectOf(MaxEnvironmentBytes+1) +
				`,"tools":[` + tool("delegate_task", desc(MaxDescriptionBytes+1)) + `,` + tool("b", schema(MaxInputSchemaBytes+1)) + `]}`,
			[]refusal.Problem{
				{Code: CodeValidationFailed, Path: "tools[0].description"},
				{Code: CodeValidationFailed, Path: "tools[1].input_schema"},
				{Code: CodeValidationFailed, Path: "environment"},
				{Code: CodeValidationFailed, Path: "documents"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, r := ParseAnnouncement([]byte(tt.body))
			if diff := cmp.Diff(tt.want, problemsOf(r)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			if r != nil && status(r) != 422 {
				t.Errorf("status = %d", status(r))
			}
		})
	}
}

func TestParseAnnouncementReservedNames(t *testing.T) {
	t.Parallel()
	for _, k := range KernelNames() {
		for _, name := range []string{k.Wire, k.Canonical} {
			_, r := ParseAnnouncement([]byte(body(tool("ok"), tool(name))))
			switch {
			case k.Class == ClassReserved:
				want := []refusal.Problem{{Code: CodeReservedNamespace, Path: "tools[1].name", Name: name}}
				if diff := cmp.Diff(want, problemsOf(r)); diff != "" {
					t.Errorf("%s (-want +got):\n%s", name, diff)
				}
				ns, _ := NamespaceOf(k.Canonical)
				if r != nil && r.Message != "tools[1].name: "+name+" is a kernel tool in the reserved namespace "+ns+"." {
					t.Errorf("%s: message %q", name, r.Message)
				}
			case name == k.Canonical:
				// A dotted spelling of an admitted name fails the name grammar.
				want := []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[1].name", Name: name}}
				if diff := cmp.Diff(want, problemsOf(r)); diff != "" {
					t.Errorf("%s (-want +got):\n%s", name, diff)
				}
			default:
				// Memory names, skill and models_list are admitted at the HTTP door.
				if r != nil {
					t.Errorf("%s refused: %+v", name, r)
				}
			}
		}
	}
}

// TestAcceptanceAnnouncementRefusals follows docs/api.md#the-executor-plane
func TestAcceptanceAnnouncementRefusals(t *testing.T) {
	t.Parallel()
	_, r := ParseAnnouncement([]byte(body(tool("delegate_task"), tool("nexus.graph.delegate_task"), tool("tool_search"), tool("runners_list"), tool("spawn"))))
	want := []refusal.Problem{
		{Code: CodeReservedNamespace, Path: "tools[0].name", Name: "delegate_task"},
		{Code: CodeReservedNamespace, Path: "tools[1].name", Name: "nexus.graph.delegate_task"},
		{Code: CodeReservedNamespace, Path: "tools[2].name", Name: "tool_search"},
		{Code: CodeReservedNamespace, Path: "tools[3].name", Name: "runners_list"},
		{Code: CodeReservedNamespace, Path: "tools[4].name", Name: "spawn"},
	}
	if diff := cmp.Diff(want, problemsOf(r)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if r.Code != CodeReservedNamespace || pathOf(r) != "tools[0].name" || nameOf(r) != "delegate_task" || status(r) != 422 {
		t.Errorf("head = %s %s %s %d", r.Code, pathOf(r), nameOf(r), status(r))
	}
	// The worked body: the first failure named, all of them listed.
	_, r = ParseAnnouncement([]byte(body(tool("delegate_task"), tool("fine"),
		`{"name":"bad","effect_profile":{"kind":"write","destructive":false,"effect_scope":"open","idempotency":"sometimes","reconciliation":"none"}}`)))
	if r == nil {
		t.Fatal("accepted")
	}
	items, _ := json.Marshal(r.Errors)
	wantItems := `[{"code":"reserved_namespace","path":"tools[0].name","name":"delegate_task"},{"code":"invalid_announcement","path":"tools[2].effect_profile.idempotency"}]`
	if string(items) != wantItems {
		t.Errorf("errors = %s\nwant     %s", items, wantItems)
	}
	if r.Message != "tools[0].name: delegate_task is a kernel tool in the reserved namespace nexus.graph." {
		t.Errorf("message = %q", r.Message)
	}
}

func TestParseAnnouncementInvalid(t *testing.T) {
	t.Parallel()
	ro := `"effect_profile":` + profileRO
	tests := []struct {
		name, body string
		want       []refusal.Problem
	}{
		{"tools not an array", `{"tools":{}}`, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools"}}},
		{"tools a string", `{"tools":"a"}`, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools"}}},
		{"entry not an object", body(`"screenshot"`), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0]"}}},
		{"entry null", body(`null`), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0]"}}},
		{"entry repeats a key", body(`{"name":"a","name":"b",` + ro + `}`), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].name"}}},
		{"name missing", body(`{` + ro + `}`), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].name"}}},
		{"name empty", body(tool("")), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].name"}}},
		{"name a number", body(`{"name":7,` + ro + `}`), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].name"}}},
		{"name null", body(`{"name":null,` + ro + `}`), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].name"}}},
		{"name with a dot", body(tool("nexus.memory.read")), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].name", Name: "nexus.memory.read"}}},
		{"unknown dotted name", body(tool("nexus.graph.other")), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].name", Name: "nexus.graph.other"}}},
		{"name with a space", body(tool("a b")), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].name", Name: "a b"}}},
		{"name of 129", body(tool(strings.Repeat("a", MaxToolNameLength+1))), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].name"}}},
		{"name of 128", body(tool(strings.Repeat("a", MaxToolNameLength))), nil},
		{"mixed-case name", body(tool("Read-File_2")), nil},
		{"duplicate name", body(tool("a"), tool("b"), tool("a")), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[2].name", Name: "a"}}},
		{"names differ by case", body(tool("a"), tool("A")), nil},
		{"profile missing", body(`{"name":"a"}`), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].effect_profile"}}},
		{"profile null", body(`{"name":"a","effect_profile":null}`), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].effect_profile"}}},
		{"profile a string", body(`{"name":"a","effect_profile":"read_only"}`), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].effect_profile"}}},
		{"profile unknown key", body(`{"name":"a","effect_profile":{"kind":"pure","destructive":false,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none","risk":"low"}}`),
			[]refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].effect_profile.risk"}}},
		{"profile repeated key", body(`{"name":"a","effect_profile":{"kind":"pure","kind":"pure","destructive":false,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"}}`),
			[]refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].effect_profile.kind"}}},
		{"profile missing destructive", body(`{"name":"a","effect_profile":{"kind":"pure","effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"}}`),
			[]refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].effect_profile.destructive"}}},
		{"profile destructive a string", body(`{"name":"a","effect_profile":{"kind":"write","destructive":"no","effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"}}`),
			[]refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].effect_profile.destructive"}}},
		{"profile kind outside", body(`{"name":"a","effect_profile":{"kind":"delete","destructive":false,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"}}`),
			[]refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].effect_profile.kind"}}},
		{"profile scope outside", body(`{"name":"a","effect_profile":{"kind":"write","destructive":false,"effect_scope":"world","idempotency":"intrinsic","reconciliation":"none"}}`),
			[]refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].effect_profile.effect_scope"}}},
		{"profile reconciliation outside", body(`{"name":"a","effect_profile":{"kind":"write","destructive":false,"effect_scope":"open","idempotency":"intrinsic","reconciliation":"retry"}}`),
			[]refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].effect_profile.reconciliation"}}},
		{"read-only destructive", body(`{"name":"a","effect_profile":{"kind":"read_only","destructive":true,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"}}`),
			[]refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].effect_profile.destructive"}}},
		{"write destructive", body(`{"name":"a","effect_profile":{"kind":"write","destructive":true,"effect_scope":"open","idempotency":"keyed","reconciliation":"lookup"}}`), nil},
		{"timeout 0", body(tool("a", `"timeout_ms":0`)), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].timeout_ms"}}},
		{"timeout negative", body(tool("a", `"timeout_ms":-5`)), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].timeout_ms"}}},
		{"timeout 1", body(tool("a", `"timeout_ms":1`)), nil},
		{"timeout 7 days", body(tool("a", `"timeout_ms":604800000`)), nil},
		{"timeout over 7 days", body(tool("a", `"timeout_ms":604800001`)), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].timeout_ms"}}},
		{"timeout beyond int64", body(tool("a", `"timeout_ms":99999999999999999999`)), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].timeout_ms"}}},
		{"timeout a string", body(tool("a", `"timeout_ms":"1000"`)), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].timeout_ms"}}},
		{"timeout a fraction", body(tool("a", `"timeout_ms":1000.5`)), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].timeout_ms"}}},
		{"timeout an exponent", body(tool("a", `"timeout_ms":1e3`)), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].timeout_ms"}}},
		{"timeout null", body(tool("a", `"timeout_ms":null`)), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].timeout_ms"}}},
		{"description empty", body(tool("a", `"description":""`)), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].description"}}},
		{"description a number", body(tool("a", `"description":3`)), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].description"}}},
		{"description null", body(tool("a", `"description":null`)), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].description"}}},
		{"description with NUL", body(tool("a", `"description":"a\u0000b"`)), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].description"}}},
		{"schema an array", body(tool("a", `"input_schema":[]`)), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].input_schema"}}},
		{"schema null", body(tool("a", `"input_schema":null`)), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].input_schema"}}},
		{"schema without type", body(tool("a", `"input_schema":{"properties":{}}`)), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].input_schema.type"}}},
		{"schema of type array", body(tool("a", `"input_schema":{"type":"array"}`)), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].input_schema.type"}}},
		{"schema with type list", body(tool("a", `"input_schema":{"type":["object"]}`)), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].input_schema.type"}}},
		{"schema repeats a key", body(tool("a", `"input_schema":{"type":"object","properties":{"a":{},"a":{}}}`)), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].input_schema"}}},
		{"schema with NUL", body(tool("a", `"input_schema":{"type":"object","description":"\u0000"}`)), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].input_schema"}}},
		{"schema with lone surrogate", body(tool("a", `"input_schema":{"type":"object","description":"\ud800"}`)), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].input_schema"}}},
		{"schema not compiled", body(tool("a", `"input_schema":{"type":"object","properties":7}`)), nil},
		{"unknown key", body(tool("a", `"parameters":{}`, `"strict":true`)), []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].parameters"}}},
		{
			"one entry, every field wrong",
			body(`{"extra":1,"name":"a.b","effect_profile":{},"timeout_ms":0,"description":"","input_schema":1}`),
			[]refusal.Problem{
				{Code: CodeInvalidAnnouncement, Path: "tools[0].name", Name: "a.b"},
				{Code: CodeInvalidAnnouncement, Path: "tools[0].effect_profile.kind"},
				{Code: CodeInvalidAnnouncement, Path: "tools[0].timeout_ms"},
				{Code: CodeInvalidAnnouncement, Path: "tools[0].description"},
				{Code: CodeInvalidAnnouncement, Path: "tools[0].input_schema"},
				{Code: CodeInvalidAnnouncement, Path: "tools[0].extra"},
			},
		},
		{"environment an array", `{"tools":[],"environment":[]}`, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "environment"}}},
		{"environment a string", `{"tools":[],"environment":"linux"}`, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "environment"}}},
		{"environment null", `{"tools":[],"environment":null}`, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "environment"}}},
		{"environment repeats a key", `{"tools":[],"environment":{"os":"a","os":"b"}}`, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "environment"}}},
		{"environment with NUL", `{"tools":[],"environment":{"os":"\u0000"}}`, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "environment"}}},
		{"environment nested", `{"tools":[],"environment":{"os":{"name":"linux","tags":[1,2.5,null,true]}}}`, nil},
		{"documents an object", `{"tools":[],"documents":{}}`, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "documents"}}},
		{"documents null", `{"tools":[],"documents":null}`, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "documents"}}},
		{"document not an object", `{"tools":[],"documents":["guide"]}`, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "documents[0]"}}},
		{"document repeats a key", `{"tools":[],"documents":[{"name":"a","name":"b","description":"x"}]}`, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "documents[0].name"}}},
		{"document without name", `{"tools":[],"documents":[{"description":"x"}]}`, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "documents[0].name"}}},
		{"document name a number", `{"tools":[],"documents":[{"name":1,"description":"x"}]}`, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "documents[0].name"}}},
		{"document name uppercase", `{"tools":[],"documents":[{"name":"Guide","description":"x"}]}`, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "documents[0].name", Name: "Guide"}}},
		{"document name double hyphen", `{"tools":[],"documents":[{"name":"a--b","description":"x"}]}`, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "documents[0].name", Name: "a--b"}}},
		{"document name trailing hyphen", `{"tools":[],"documents":[{"name":"a-","description":"x"}]}`, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "documents[0].name", Name: "a-"}}},
		{"document name of 64", `{"tools":[],"documents":[{"name":"` + strings.Repeat("a", 64) + `","description":"x"}]}`, nil},
		{"document name of 65", `{"tools":[],"documents":[{"name":"` + strings.Repeat("a", 65) + `","description":"x"}]}`, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "documents[0].name", Name: strings.Repeat("a", 65)}}},
		{"document without description", `{"tools":[],"documents":[{"name":"a"}]}`, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "documents[0].description"}}},
		{"document description empty", `{"tools":[],"documents":[{"name":"a","description":""}]}`, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "documents[0].description"}}},
		{"document description of 1024", `{"tools":[],"documents":[{"name":"a","description":"` + strings.Repeat("é", 512) + `"}]}`, nil},
		{"document description of 1025", `{"tools":[],"documents":[{"name":"a","description":"` + strings.Repeat("é", 512) + `x"}]}`, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "documents[0].description"}}},
		{"document description a bool", `{"tools":[],"documents":[{"name":"a","description":true}]}`, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "documents[0].description"}}},
		{"document unknown key", `{"tools":[],"documents":[{"name":"a","description":"x","body":"…"}]}`, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "documents[0].body"}}},
		// docs/api.md#the-executor-plane: a duplicate document is refused at the second entry.
		{"duplicate document", `{"tools":[],"documents":[{"name":"guide","description":"x"},{"name":"guide","description":"y"}]}`,
			[]refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "documents[1]", Name: "guide"}}},
		{"top-level key repeated", `{"tools":[],"tools":[]}`, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools"}}},
		{"top-level unknown key", `{"tools":[],"document":[]}`, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "document"}}},
		{
			// Document order: tools, environment, documents, unknown keys last.
			"order across the body",
			`{"extra":1,"documents":[{"name":"X","description":"x"}],"environment":[],"tools":[` + tool("spawn") + `,` + tool("ok", `"timeout_ms":0`) + `]}`,
			[]refusal.Problem{
				{Code: CodeReservedNamespace, Path: "tools[0].name", Name: "spawn"},
				{Code: CodeInvalidAnnouncement, Path: "tools[1].timeout_ms"},
				{Code: CodeInvalidAnnouncement, Path: "environment"},
				{Code: CodeInvalidAnnouncement, Path: "documents[0].name", Name: "X"},
				{Code: CodeInvalidAnnouncement, Path: "extra"},
			},
		},
		{"a reserved name is not a duplicate", body(tool("ask"), tool("ask")), []refusal.Problem{
			{Code: CodeReservedNamespace, Path: "tools[0].name", Name: "ask"},
			{Code: CodeReservedNamespace, Path: "tools[1].name", Name: "ask"},
		}},
		{"write profile", body(`{"name":"w","effect_profile":` + profileW + `}`), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, r := ParseAnnouncement([]byte(tt.body))
			if diff := cmp.Diff(tt.want, problemsOf(r)); diff != "" {
				t.Fatalf("problems (-want +got):\n%s", diff)
			}
			if r == nil {
				if vr := Validate(a); vr != nil {
					t.Errorf("Validate refuses what ParseAnnouncement accepted: %+v", vr)
				}
				return
			}
			if status(r) != 422 {
				t.Errorf("status = %d, want 422", status(r))
			}
			if r.Code != r.Errors[0].Code || pathOf(r) != r.Errors[0].Path || nameOf(r) != r.Errors[0].Name {
				t.Errorf("head %s %s %s differs from errors[0] %+v", r.Code, pathOf(r), nameOf(r), r.Errors[0])
			}
			if !strings.HasPrefix(r.Message, pathOf(r)+": ") {
				t.Errorf("message %q does not name its path", r.Message)
			}
			if a.Tools != nil || a.Documents != nil || a.Environment != nil {
				t.Errorf("a refusal returned an announcement: %+v", a)
			}
		})
	}
}
