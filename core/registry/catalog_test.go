package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nexuskernel/nexus/sdk/announce"
)

var update = flag.Bool("update", false, "rewrite testdata/catalog.golden.json and the contract pack file from the registry")

const regenerate = "run `make contracts` (go test ./core/registry -run 'TestContractPack|TestGoldenCatalog' -update) and review the diff"

// The digest docs/api.md#health-and-the-catalog gives for its version of the catalog. It changes
// whenever a template, schema, profile or the order changes there; update it with the golden file.
const (
	specBodyLength = 44813
	specBodySHA256 = "9b5754f137c0f6f8a4e5a36252c3d86e31e2d8f613be2c707b21bfae3a2c5997"
)

// specStatusEntry is the status entry (docs/api.md#health-and-the-catalog), exactly as the route
// serves it.
const specStatusEntry = `{"canonical_name":"nexus.conversation.status","name":"status","effect_profile":{"kind":"read_only","destructive":false,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"},"definition":{"type":"function","function":{"name":"status","description":"Report the current state of a conversation you opened or are allowed to read: whether an answer\nis being produced there right now, how many messages are queued behind it, and which agent\nanswers there. Replies come to you by themselves, so never call this in a loop to wait; use it\nwhen the current state decides what to send next or whether to cancel.","parameters":{"type":"object","properties":{"to":{"type":"string","description":"Target conversation, by the label you chose in spawn or by its public id."}},"required":["to"],"additionalProperties":false}}},"template":"Report the current state of a conversation you opened or are allowed to read: whether an answer\nis being produced there right now, how many messages are queued behind it, and which agent\nanswers there. Replies come to you by themselves, so never call this in a loop to wait; use it\nwhen the current state decides what to {{send}} next or whether to {{cancel}}."}`

// checkFile compares a checked-in file (path from this package, name from the module root)
// with the bytes the registry writes, rewriting it first under -update.
func checkFile(t *testing.T, path, name string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v; %s", name, err, regenerate)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from what the registry writes; %s\n(-file +registry):\n%s",
			name, regenerate, cmp.Diff(string(want), string(got)))
	}
}

func TestGoldenCatalog(t *testing.T) {
	got, err := indentFile(New().CatalogBody())
	if err != nil {
		t.Fatal(err)
	}
	checkFile(t, filepath.Join("testdata", "catalog.golden.json"), "core/registry/testdata/catalog.golden.json", got)
}

func TestContractPack(t *testing.T) {
	r := New()
	pack := r.ContractPack()
	checkFile(t, filepath.Join("..", "..", filepath.FromSlash(ContractPackFile)), ContractPackFile, pack)

	// The file is the route's own bytes for the entry, indented: compacting it gives back
	// the envelope around the served entry.
	var served json.RawMessage
	for _, raw := range servedEntries(t, r.CatalogBody()) {
		var head struct {
			CanonicalName string `json:"canonical_name"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			t.Fatal(err)
		}
		if head.CanonicalName == ContractPackCanonical {
			served = raw
		}
	}
	if served == nil {
		t.Fatalf("the catalog serves no %s", ContractPackCanonical)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, pack); err != nil {
		t.Fatal(err)
	}
	want := `{"tools":[` + string(served) + `]}`
	if diff := cmp.Diff(want, compact.String()); diff != "" {
		t.Errorf("compacted contract pack differs from the served %s entry (-served +pack):\n%s", ContractPackCanonical, diff)
	}
	if !bytes.HasSuffix(pack, []byte("}\n")) || bytes.HasSuffix(pack, []byte("\n\n")) {
		t.Error("the contract pack does not end in exactly one line feed")
	}
}

// TestCatalogMatchesSpec: the body is the byte for byte (docs/agent-tools.md).
func TestCatalogMatchesSpec(t *testing.T) {
	t.Parallel()
	r := New()
	body := r.CatalogBody()
	sum := sha256.Sum256(body)
	if len(body) != specBodyLength || hex.EncodeToString(sum[:]) != specBodySHA256 {
		t.Errorf("catalog body is %d bytes with SHA-256 %x; the pinned catalog is %d bytes, %s",
			len(body), sum, specBodyLength, specBodySHA256)
	}
	for i, raw := range servedEntries(t, body) {
		if r.entries[i].Wire == "status" && string(raw) != specStatusEntry {
			t.Errorf("status entry differs from the pinned entry (-pinned +served):\n%s", cmp.Diff(specStatusEntry, string(raw)))
		}
	}
}

// jsonEscape matches one escape sequence inside a JSON text.
var jsonEscape = regexp.MustCompile(`\\(u[0-9a-fA-F]{4}|.)`)

func TestDeterminism(t *testing.T) {
	t.Parallel()
	first, err := build()
	if err != nil {
		t.Fatal(err)
	}
	second, err := build()
	if err != nil {
		t.Fatal(err)
	}
	body := first.CatalogBody()
	for i, other := range [][]byte{first.CatalogBody(), second.CatalogBody(), New().CatalogBody(), New().CatalogBody()} {
		if !bytes.Equal(body, other) {
			t.Errorf("build %d gives different catalog bytes", i)
		}
	}
	if !bytes.Equal(first.ContractPack(), second.ContractPack()) {
		t.Error("two registries give different contract packs")
	}

	if !bytes.HasSuffix(body, []byte("}\n")) || bytes.HasSuffix(body, []byte("\n\n")) {
		t.Error("the body does not end in exactly one line feed")
	}
	if bytes.Count(body, []byte("\n")) != 1 {
		t.Error("the body has insignificant line feeds")
	}
	if !bytes.Contains(body, []byte("<task_result>")) {
		t.Error("the body does not contain <task_result> literally")
	}
	// Only the escapes JSON requires for these texts: \" \\ \n.
	for _, esc := range jsonEscape.FindAll(body, -1) {
		switch string(esc) {
		case `\"`, `\\`, `\n`:
		default:
			t.Errorf("the body contains the escape %s", esc)
		}
	}

	top := members(t, body[:len(body)-1])
	if diff := cmp.Diff([]string{"tools"}, keysOf(top)); diff != "" {
		t.Errorf("envelope keys (-want +got):\n%s", diff)
	}
	var order []string
	for _, raw := range servedEntries(t, body) {
		entry := members(t, raw)
		if diff := cmp.Diff([]string{"canonical_name", "name", "effect_profile", "definition", "template"}, keysOf(entry)); diff != "" {
			t.Errorf("entry keys (-want +got):\n%s", diff)
		}
		prof, _ := get(entry, "effect_profile")
		if diff := cmp.Diff(announce.ProfileKeys(), keysOf(members(t, prof))); diff != "" {
			t.Errorf("effect profile keys (-want +got):\n%s", diff)
		}
		def, _ := get(entry, "definition")
		defMembers := members(t, def)
		if diff := cmp.Diff([]string{"type", "function"}, keysOf(defMembers)); diff != "" {
			t.Errorf("definition keys (-want +got):\n%s", diff)
		}
		fn, _ := get(defMembers, "function")
		if diff := cmp.Diff([]string{"name", "description", "parameters"}, keysOf(members(t, fn))); diff != "" {
			t.Errorf("function keys (-want +got):\n%s", diff)
		}
		name, _ := get(entry, "name")
		var s string
		if err := json.Unmarshal(name, &s); err != nil {
			t.Fatal(err)
		}
		order = append(order, s)
	}
	// docs/agent-tools.md#the-twenty-kernel-tools.
	want := []string{"delegate_task", "wait", "ask", "spawn", "send", "status", "cancel",
		"session_read", "session_search", "memory_ls", "memory_read", "memory_grep", "memory_write",
		"memory_edit", "memory_delete", "tool_search", "tool_call", "runners_list", "models_list", "skill"}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("catalog order (-want +got):\n%s", diff)
	}
}

func TestDefinitionEquality(t *testing.T) {
	t.Parallel()
	r := New()
	entries := r.Entries()
	for i, raw := range servedEntries(t, r.CatalogBody()) {
		e := entries[i]
		var served struct {
			Name       string          `json:"name"`
			Definition json.RawMessage `json:"definition"`
			Template   string          `json:"template"`
		}
		if err := json.Unmarshal(raw, &served); err != nil {
			t.Fatal(err)
		}
		var def struct {
			Type     string `json:"type"`
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(served.Definition, &def); err != nil {
			t.Fatal(err)
		}
		if def.Type != "function" || def.Function.Name != served.Name || served.Name != e.Wire {
			t.Errorf("%s: type %q, function.name %q, name %q", e.Wire, def.Type, def.Function.Name, served.Name)
		}
		if served.Template != e.Template {
			t.Errorf("%s: served template differs from the entry's", e.Wire)
		}
		if want := Render(served.Template, PlainSpelling); def.Function.Description != want {
			t.Errorf("%s: description differs from the plain render of the template (-render +served):\n%s", e.Wire, cmp.Diff(want, def.Function.Description))
		}
		plain, err := RenderSchema(e.Schema, PlainSpelling)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(def.Function.Parameters, plain) {
			t.Errorf("%s: parameters differ from the plain render of the schema (-render +served):\n%s", e.Wire, cmp.Diff(string(plain), string(def.Function.Parameters)))
		}
		built, err := Definition(e, PlainSpelling)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(built, served.Definition) {
			t.Errorf("%s: Definition(plain) differs from the served definition", e.Wire)
		}
		if e.PlainDescription() != def.Function.Description {
			t.Errorf("%s: PlainDescription differs from the served description", e.Wire)
		}
	}
}
