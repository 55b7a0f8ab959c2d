package envelope

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustValidate(t *testing.T, body string) *Result {
	t.Helper()
	r, err := validateBody([]byte(body), ownAll)
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return r
}

// TestIdentityCase: a bare string and one text block store the same bytes and project the
// same output (docs/api.md#the-result-envelope, docs/api.md#the-executor-plane).
func TestIdentityCase(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"ok", " padded ", "line\nbreak", "<&>", "é\u2028", "\t", "", "\"quoted\"", strings.Repeat("x", 5000)} {
		q, _ := json.Marshal(s)
		bare := mustValidate(t, `{"content":`+string(q)+`}`)
		block := mustValidate(t, `{"content":[{"type":"text","text":`+string(q)+`}]}`)
		if !bytes.Equal(bare.ContentJSON(), block.ContentJSON()) {
			t.Errorf("%q: stored %s vs %s", s, bare.ContentJSON(), block.ContentJSON())
		}
		if bare.Output(nil) != block.Output(nil) {
			t.Errorf("%q: output %q vs %q", s, bare.Output(nil), block.Output(nil))
		}
		if diff := cmp.Diff(bare, block); diff != "" {
			t.Errorf("%q: results differ (-bare +block):\n%s", s, diff)
		}
	}
}

func TestBlankResults(t *testing.T) {
	t.Parallel()
	// Every one of these writes no body and the model reads "" (docs/api.md#the-result-envelope).
	for _, body := range []string{
		`{}`, `{"content":null}`, `{"content":""}`, `{"content":" \n\t "}`, `{"content":[]}`,
		`{"content":[{"type":"text","text":"  "},{"type":"text","text":""}]}`,
		`{"content":"\u00a0\u2003"}`, // Unicode White_Space
	} {
		r := mustValidate(t, body)
		if r.Content != nil || r.ContentJSON() != nil || r.Output(nil) != "" {
			t.Errorf("%s: content %v, stored %s, output %q", body, r.Content, r.ContentJSON(), r.Output(nil))
		}
	}
	// A link is always a body, even with nothing else to read.
	r := mustValidate(t, `{"content":[{"type":"text","text":" "},`+link(upPNG)+`]}`)
	if r.Content == nil || r.Output(isMediaUpload) != "" {
		t.Errorf("media link: content %v, output %q", r.Content, r.Output(isMediaUpload))
	}
	// Structure beside a blank result is still stored.
	r = mustValidate(t, `{"content":"  ","structured_content":0,"title":"t","metadata":{"checkpoint":null}}`)
	if r.Content != nil || string(r.StructuredContent) != "0" || r.Title != "t" || string(r.Metadata) != `{"checkpoint":null}` {
		t.Errorf("got %+v", r)
	}
}

func TestOutput(t *testing.T) {
	t.Parallel()
	text := func(s string) Block { return TextBlock(s) }
	png := Block{Type: TypeResourceLink, URI: UploadURIPrefix + upPNG, Name: "page.png"}
	log := Block{Type: TypeResourceLink, URI: UploadURIPrefix + upText, Name: "build.log", Size: ptr(int64(12))}
	logJSON := `{"name":"build.log","size":12,"type":"resource_link","uri":"nexus://uploads/` + upText + `"}`
	tests := []struct {
		name   string
		blocks []Block
		want   string
	}{
		{"nothing", nil, ""},
		{"one text", []Block{text("a")}, "a"},
		{"texts joined by one line feed", []Block{text("a"), text("b")}, "a\nb"},
		{"an empty text still contributes", []Block{text("a"), text(""), text("b")}, "a\n\nb"},
		{"a media link contributes nothing", []Block{text("a"), png, text("b")}, "a\nb"},
		{"a non-media link in block order", []Block{text("a"), log, text("b")}, "a\n" + logJSON + "\nb"},
		{"only a non-media link", []Block{log}, logJSON},
		{"only media", []Block{png}, ""},
		{"whitespace around media", []Block{text(" "), png, text("\n")}, ""},
		{"inner whitespace is kept", []Block{text(" a "), text(" ")}, " a \n "},
	}
	for _, tt := range tests {
		if got := Output(tt.blocks, isMediaUpload); got != tt.want {
			t.Errorf("%s: Output = %q, want %q", tt.name, got, tt.want)
		}
	}
	if diff := cmp.Diff([]Block{png}, MediaLinks([]Block{text("a"), log, png}, isMediaUpload)); diff != "" {
		t.Errorf("MediaLinks (-want +got):\n%s", diff)
	}
	if MediaLinks([]Block{png}, nil) != nil {
		t.Error("MediaLinks with no resolver found media")
	}
}

func TestIsMediaType(t *testing.T) {
	t.Parallel()
	for typ, want := range map[string]bool{
		"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true, "application/pdf": true,
		"IMAGE/PNG": true, "image/png; charset=binary": true, " image/jpeg ": true,
		"text/plain; charset=utf-8": false, "image/svg+xml": false, "application/octet-stream": false,
		"image/bmp": false, "": false, "image": false, "application/pdf;": true,
	} {
		if got := IsMediaType(typ); got != want {
			t.Errorf("IsMediaType(%q) = %v, want %v", typ, got, want)
		}
	}
}

func TestFailureDetail(t *testing.T) {
	t.Parallel()
	if _, ok := FailureDetail(""); ok {
		t.Error("blank output has a detail")
	}
	if _, ok := FailureDetail(" \n"); ok {
		t.Error("whitespace output has a detail")
	}
	if d, ok := FailureDetail("could not connect"); !ok || d != "could not connect" {
		t.Errorf("short = %q, %v", d, ok)
	}
	exact := strings.Repeat("a", MaxFailureDetailBytes)
	if d, _ := FailureDetail(exact + "tail"); d != exact {
		t.Errorf("long ascii cut at %d bytes", len(d))
	}
	// "é" is two bytes: 1,023 bytes of a then é would straddle the bound, so it is dropped.
	straddle := strings.Repeat("a", MaxFailureDetailBytes-1) + "é"
	if d, _ := FailureDetail(straddle); d != strings.Repeat("a", MaxFailureDetailBytes-1) {
		t.Errorf("straddling rune kept: %d bytes", len(d))
	}
	if d, _ := FailureDetail(strings.Repeat("€", 400)); len(d) != 1023 || !strings.HasSuffix(d, "€") {
		t.Errorf("three-byte runes cut at %d bytes", len(d))
	}
}

func TestDecodeContent(t *testing.T) {
	t.Parallel()
	r := mustValidate(t, `{"content":[{"type":"text","text":"a","_meta":{"k":1}},`+link(upText, `"size":3`, `"title":"T"`)+`]}`)
	blocks, err := DecodeContent(r.ContentJSON())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r.Content, blocks); diff != "" {
		t.Errorf("round trip (-validated +decoded):\n%s", diff)
	}
	if b, err := DecodeContent(nil); b != nil || err != nil {
		t.Errorf("blank = %v, %v", b, err)
	}
	for _, bad := range []string{`{}`, `[{"type":"image"}]`, `["x"]`, `[`} {
		if _, err := DecodeContent([]byte(bad)); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
}

func TestBlockMarshalJSON(t *testing.T) {
	t.Parallel()
	r := mustValidate(t, `{"content":[{"text":"<a>","type":"text"},`+link(upPNG)+`]}`)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r.Content); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(buf.String()), string(r.ContentJSON()); got != want {
		t.Errorf("encoder %s\nstored  %s", got, want)
	}
}

func TestFieldValues(t *testing.T) {
	t.Parallel()
	r := mustValidate(t, `{"claim_token":"nxc_x","content":"x","is_error":true,"outcome":"failed","result_type":"complete","title":"t","extra":{"a":1},"extra":2}`)
	if !r.IsError || r.Outcome != OutcomeFailed || r.Title != "t" {
		t.Errorf("got %+v", r)
	}
	r = mustValidate(t, `{"is_error":false,"outcome":"completed"}`)
	if r.IsError || r.Outcome != OutcomeCompleted {
		t.Errorf("got %+v", r)
	}
	r = mustValidate(t, `{}`)
	if r.IsError || r.Outcome != OutcomeCompleted || r.StructuredContent != nil || r.Metadata != nil || r.Title != "" {
		t.Errorf("defaults: %+v", r)
	}
	// The checkpoint may hold any JSON value, kept verbatim.
	for _, cp := range []string{`{"cwd":"/w","rev":"abc"}`, `"plain"`, `[1,2]`, `null`} {
		r := mustValidate(t, `{"metadata":{"viewport":"x","checkpoint":`+cp+`}}`)
		got, ok := r.Checkpoint()
		if !ok || string(got) != cp {
			t.Errorf("checkpoint %s = %s, %v", cp, got, ok)
		}
	}
	if _, ok := mustValidate(t, `{"metadata":{}}`).Checkpoint(); ok {
		t.Error("empty metadata has a checkpoint")
	}
	// structured_content is stored as sent, compacted, keys in their order.
	r = mustValidate(t, `{"structured_content": { "b" : [ 1 , 2.50 ], "a" : "\u00e9" } }`)
	if got := string(r.StructuredContent); got != `{"b":[1,2.50],"a":"\u00e9"}` {
		t.Errorf("structured = %s", got)
	}
}

func ptr[T any](v T) *T { return &v }
