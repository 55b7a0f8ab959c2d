package envelope

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// TestTypedRefusals pins what a submission of typed values (the plugin host's) can still break,
// with the word and path a body with the same values answers.
func TestTypedRefusals(t *testing.T) {
	t.Parallel()
	link := func(uri, name string) Block { return Block{Type: TypeResourceLink, URI: uri, Name: name} }
	own := UploadURIPrefix + upPNG
	many := make([]Block, MaxContentBlocks+1)
	for i := range many {
		many[i] = TextBlock("x")
	}
	tests := []struct {
		name       string
		s          Submission
		code, path string
		message    string
	}{
		{"outcome unknown", Submission{Outcome: "done"}, CodeInvalidOutcome, "outcome", `outcome is "completed" or "failed".`},
		{"title empty", Submission{Title: ptr("")}, CodeInvalidTitle, "title", "title is one line of 1..512 bytes."},
		{"title with LF", Submission{Title: ptr("a\nb")}, CodeInvalidTitle, "title", "title is one line of 1..512 bytes."},
		{"metadata an array", Submission{Metadata: json.RawMessage(`[]`)}, CodeInvalidMetadata, "metadata", "metadata is a JSON object."},
		{"metadata not JSON", Submission{Metadata: json.RawMessage(`{`)}, CodeInvalidMetadata, "metadata", "metadata is a JSON object."},
		{"metadata repeats a key", Submission{Metadata: json.RawMessage(`{"a":1,"a":2}`)}, CodeInvalidMetadata, "metadata.a", "metadata.a is given more than once."},
		{"text and blocks", Submission{Text: ptr("a"), Blocks: []Block{TextBlock("b")}}, CodeInvalidContent, "content", "content is a string or a list of content blocks."},
		{"257 blocks", Submission{Blocks: many}, CodeTooManyContentBlocks, "content", "content holds 257 blocks, more than 256."},
		{"block without type", Submission{Blocks: []Block{TextBlock("ok"), {}}}, CodeInvalidContent, "content[1].type", "content[1].type: a content block needs a type."},
		{"image block", Submission{Blocks: []Block{{Type: "image"}}}, CodeUnsupportedContentKind, "content[0].type",
			`content[0].type: "image" blocks are not supported; content holds text and resource_link blocks.`},
		{"link without uri", Submission{Blocks: []Block{link("", "a")}}, CodeInvalidContent, "content[0].uri", "content[0].uri: a resource_link needs a uri."},
		{"link of a capture", Submission{Blocks: []Block{link("capture:a", "a")}}, CodeInvalidContent, "content[0].uri",
			"content[0].uri: a resource_link's uri is nexus://uploads/ followed by a lowercase UUID."},
		{"link without name", Submission{Blocks: []Block{link(own, "")}}, CodeInvalidContent, "content[0].name", "content[0].name: a resource_link needs a name."},
		{"link size negative", Submission{Blocks: []Block{{Type: TypeResourceLink, URI: own, Name: "a", Size: ptr(int64(-1))}}}, CodeInvalidContent, "content[0].size",
			"content[0].size: a resource_link's size is an integer of at least 0."},
		{"annotations a list", Submission{Blocks: []Block{{Type: TypeText, Annotations: json.RawMessage(`[]`)}}}, CodeInvalidContent, "content[0].annotations",
			"content[0].annotations: annotations is a JSON object."},
		{"structured not JSON", Submission{StructuredContent: json.RawMessage(`{"a":`)}, CodeInvalidContent, "structured_content", "structured_content is one JSON value."},
		{"result over 1 MiB", Submission{Text: ptr(strings.Repeat("r", MaxResultBytes))}, CodeResultTooLarge, "", ""},
		{"foreign upload", Submission{Blocks: []Block{link(own, "a"), link(UploadURIPrefix+upOther, "b")}}, CodeUnknownResultUpload, "content[1].uri", ""},
		{"NUL in text", Submission{Text: ptr("a\x00b")}, CodeResultUnstorable, "content", ""},
		{"not UTF-8 in a block", Submission{Blocks: []Block{TextBlock("ok"), TextBlock("a\xffb")}}, CodeResultUnstorable, "content[1]", ""},
		{"NUL in a link name", Submission{Blocks: []Block{link(own, "p\x00")}}, CodeResultUnstorable, "content[0]", ""},
		{"NUL in a link title", Submission{Blocks: []Block{{Type: TypeResourceLink, URI: own, Name: "a", Title: ptr("\x00")}}}, CodeResultUnstorable, "content[0]", ""},
		{"NUL in structured_content", Submission{StructuredContent: json.RawMessage(`["\u0000"]`)}, CodeResultUnstorable, "structured_content", ""},
		{"NUL in title", Submission{Title: ptr("a\x00")}, CodeResultUnstorable, "title", ""},
		{"NUL in metadata", Submission{Metadata: json.RawMessage(`{"a":"\u0000"}`)}, CodeResultUnstorable, "metadata", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := Validate(&tt.s, ownAll)
			if err == nil {
				t.Fatalf("accepted: %+v", r)
			}
			code, path := refusalOf(t, err)
			if code != tt.code || path != tt.path {
				t.Errorf("refusal = %s at %q, want %s at %q (%v)", code, path, tt.code, tt.path, err)
			}
			if ref, _ := refusal.As(err); tt.message != "" && ref.Message != tt.message {
				t.Errorf("message %q, want %q", ref.Message, tt.message)
			}
		})
	}
}

// TestTypedMatchesDecoded holds the two ways into Validate to one judgement: a submission of the
// typed values a body decodes to is stored, projected and refused exactly as the body is,
// wherever the body's own form showed nothing the typed values cannot (a repeated key, a
// mistyped value, bytes the store cannot keep).
func TestTypedMatchesDecoded(t *testing.T) {
	t.Parallel()
	bodies := []string{
		`{}`, `{"content":"hi","title":"t","is_error":true,"outcome":"failed"}`, `{"content":"  "}`,
		`{"content":[{"type":"text","text":"a","_meta":{"k":1}},` + link(upText, `"size":3`, `"title":"T"`) + `]}`,
		`{"structured_content": { "b" : [ 1 , 2.50 ] }, "metadata":{"checkpoint":{"cwd":"/"}}}`,
		`{"title":""}`, `{"title":"a\rb"}`, `{"metadata":[]}`, `{"metadata":{"a":1,"a":2}}`,
		`{"metadata":{"b":"` + strings.Repeat("m", MaxMetadataBytes) + `"}}`,
		`{"content":"` + strings.Repeat("r", MaxResultBytes) + `"}`,
		`{"content":[` + link(upPNG) + `,` + link(upOther) + `]}`,
		`{"outcome":"done","title":""}`,
	}
	inputs, _ := filepath.Glob("testdata/golden/*.json")
	for _, in := range inputs {
		b, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, string(b))
	}
	for _, body := range bodies {
		members, err := jsonwire.SplitObject([]byte(body))
		if err != nil {
			t.Fatalf("%.40s: %v", body, err)
		}
		s := Decode(members)
		if s.fault != nil {
			t.Fatalf("%.40s: a body fault %v", body, s.fault)
		}
		compareJudgements(t, body, s)
	}
}

// compareJudgements validates a decoded submission and its typed copy and fails unless both
// answer the same.
func compareJudgements(t *testing.T, name string, s *Submission) {
	t.Helper()
	want, werr := Validate(s, ownAll)
	got, gerr := Validate(typed(s), ownAll)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%.40s: typed result differs (-body +typed):\n%s", name, diff)
	}
	wr, _ := refusal.As(werr)
	gr, _ := refusal.As(gerr)
	if (werr == nil) != (gerr == nil) || (wr != nil && (gr == nil || wr.Code != gr.Code || wr.Message != gr.Message || !cmp.Equal(wr.Extra, gr.Extra))) {
		t.Errorf("%.40s: body %v, typed %v", name, werr, gerr)
	}
}
