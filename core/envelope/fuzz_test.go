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

// storedBody rebuilds a commit body from what a result stores, so that re-validating it
// checks that the stored form is itself a valid, equal envelope.
func storedBody(r *Result) []byte {
	out := []byte(`{"outcome":`)
	out = jsonwire.AppendString(out, string(r.Outcome))
	if r.IsError {
		out = append(out, `,"is_error":true`...)
	} else {
		out = append(out, `,"is_error":false`...)
	}
	if c := r.ContentJSON(); c != nil {
		out = append(out, `,"content":`...)
		out = append(out, c...)
	}
	if r.StructuredContent != nil {
		out = append(out, `,"structured_content":`...)
		out = append(out, r.StructuredContent...)
	}
	if r.Title != "" {
		out = append(out, `,"title":`...)
		out = jsonwire.AppendString(out, r.Title)
	}
	if r.Metadata != nil {
		out = append(out, `,"metadata":`...)
		out = append(out, r.Metadata...)
	}
	return append(out, '}')
}

var fuzzWords = map[string]bool{
	CodeInvalidOutcome: true, CodeInvalidResultType: true, CodeInvalidTitle: true, CodeInvalidMetadata: true,
	CodeMetadataTooLarge: true, CodeInvalidContent: true, CodeTooManyContentBlocks: true,
	CodeUnsupportedContentKind: true, CodeResultTooLarge: true, CodeUnknownResultUpload: true, CodeResultUnstorable: true,
}

// FuzzValidate: Validate never panics and answers only with the envelope's words; validation,
// storage and projection are deterministic; a body whose own form shows no fault is judged as
// the typed values it decodes to are; an accepted envelope's stored form re-validates to
// the same result; and one text block stores what the bare string stores.
func FuzzValidate(f *testing.F) {
	inputs, _ := filepath.Glob("testdata/golden/*.json")
	for _, in := range inputs {
		if b, err := os.ReadFile(in); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		`{"content":[{"type":"image"}]}`,
		`{"content":[{"type":"resource_link","uri":"nexus://uploads/` + upOther + `","name":"x"}]}`,
		`{"content":"\u0000","title":"a\nb"}`,
		`{"content":"\ud800x","metadata":{"checkpoint":{"a":1},"checkpoint":2}}`,
		`{"outcome":"failed","result_type":"complete","is_error":true,"structured_content":[1,{"a":null}]}`,
		"{\"content\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if members, err := jsonwire.SplitObject(body); err == nil {
			if s := Decode(members); s.fault == nil {
				compareJudgements(t, string(body), s)
			}
		}
		r, err := validateBody(body, ownAll)
		r2, err2 := validateBody(body, ownAll)
		if err != nil {
			ref, ok := refusal.As(err)
			if !ok {
				t.Fatalf("not a refusal: %v", err)
			}
			if !fuzzWords[ref.Code] && ref.Code != refusal.CodeParameterInvalid && ref.Code != refusal.CodeContentTooLarge {
				t.Fatalf("unknown word %q", ref.Code)
			}
			ref2, _ := refusal.As(err2)
			if ref2 == nil || ref2.Code != ref.Code || ref2.Message != ref.Message || !cmp.Equal(ref.Extra, ref2.Extra) {
				t.Fatalf("refusals differ: %v then %v", err, err2)
			}
			return
		}
		if err2 != nil || !cmp.Equal(r, r2) {
			t.Fatalf("validation is not deterministic: %+v / %+v, %v", r, r2, err2)
		}
		stored := r.ContentJSON()
		if stored != nil && !json.Valid(stored) {
			t.Fatalf("stored content is not JSON: %s", stored)
		}
		if string(stored) != string(r2.ContentJSON()) || r.Output(isMediaUpload) != r2.Output(isMediaUpload) {
			t.Fatal("storage or projection is not deterministic")
		}
		decoded, derr := DecodeContent(stored)
		if derr != nil || !cmp.Equal(decoded, r.Content, cmp.Comparer(func(a, b []Block) bool {
			return string(appendContent(nil, a)) == string(appendContent(nil, b))
		})) {
			t.Fatalf("stored content does not decode back: %v", derr)
		}
		if Output(decoded, isMediaUpload) != r.Output(isMediaUpload) {
			t.Fatal("the projection of the stored content differs")
		}
		again, err := validateBody(storedBody(r), ownAll)
		if err != nil {
			t.Fatalf("the stored form %s is refused: %v", storedBody(r), err)
		}
		if diff := cmp.Diff(r, again); diff != "" {
			t.Fatalf("the stored form re-validates differently (-first +again):\n%s", diff)
		}
		if len(r.Content) == 1 && !r.Content[0].IsLink() && r.Content[0].Annotations == nil && r.Content[0].Meta == nil {
			bare := append([]byte(`{"content":`), jsonwire.AppendString(nil, r.Content[0].Text)...)
			br, err := validateBody(append(bare, '}'), ownAll)
			if err != nil || string(br.ContentJSON()) != string(stored) {
				t.Fatalf("identity case broken: %s vs %s (%v)", br.ContentJSON(), stored, err)
			}
		}
	})
}

// FuzzEscape: escaped text opens none of the kernel's framing tags, and only "<" changes.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"<answer>", "</task_result>", "a<b", "<tool_use_error_x", "<message"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Escape(s)
		for i := 0; i < len(out); i++ {
			if out[i] == '<' && framed(out[i+1:]) {
				t.Fatalf("Escape(%q) = %q still opens a framing tag at %d", s, out, i)
			}
		}
		if strings.ReplaceAll(out, "&lt;", "<") != strings.ReplaceAll(s, "&lt;", "<") {
			t.Fatalf("Escape(%q) = %q changed more than '<'", s, out)
		}
	})
}
