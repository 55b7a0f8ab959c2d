package envelope

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

const (
	upPNG   = "6f1b2c3d-0000-4000-8000-00000000aa01" // a capture whose detected type is image/png
	upText  = "6f1b2c3d-0000-4000-8000-00000000aa02" // a capture whose detected type is text/plain
	upOther = "6f1b2c3d-0000-4000-8000-00000000bb01" // another executor's capture
)

// ownAll owns the runner's two captures, never upOther.
func ownAll(ids []string) ([]string, error) {
	var out []string
	for _, id := range ids {
		if id == upPNG || id == upText {
			out = append(out, id)
		}
	}
	return out, nil
}

func isMediaUpload(id string) bool { return id == upPNG }

func link(id string, extra ...string) string {
	parts := append([]string{`"type":"resource_link"`, `"uri":"nexus://uploads/` + id + `"`, `"name":"page.png"`}, extra...)
	return "{" + strings.Join(parts, ",") + "}"
}

// validateBody is what a door does with a body it holds: split it once, Decode its members,
// Validate the submission. The body bound and a body that is not one object are the doors' to
// refuse (core/httpapi), before anything is decoded.
func validateBody(body []byte, owned UploadOwnership) (*Result, error) {
	members, err := jsonwire.SplitObject(body)
	if err != nil {
		return nil, refusal.New(refusal.BadRequest, refusal.CodeParameterInvalid, "The request body must be a JSON object.")
	}
	return Validate(Decode(members), owned)
}

// typed is the submission a committer holding typed values would hand in for what s decoded
// from a body.
func typed(s *Submission) *Submission {
	return &Submission{Outcome: s.Outcome, IsError: s.IsError, Title: s.Title, Text: s.Text, Blocks: s.Blocks,
		StructuredContent: s.StructuredContent, Metadata: s.Metadata}
}

// refusalOf returns the word and path of err, or "" when err is nil.
func refusalOf(t *testing.T, err error) (code, path string) {
	t.Helper()
	if err == nil {
		return "", ""
	}
	r, ok := refusal.As(err)
	if !ok {
		t.Fatalf("not a refusal: %v", err)
	}
	if p, ok := r.Get("path"); ok {
		path, _ = p.(string)
	}
	return r.Code, path
}

func TestValidateRefusals(t *testing.T) {
	t.Parallel()
	many := func(n int) string {
		items := make([]string, n)
		for i := range items {
			items[i] = `{"type":"text","text":"x"}`
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	bigMetadata := `{"blob":"` + strings.Repeat("m", 70*1024) + `"}`
	tests := []struct {
		name, body string
		code, path string
	}{
		// 1. outcome
		{"outcome unknown", `{"outcome":"done"}`, CodeInvalidOutcome, "outcome"},
		{"outcome null", `{"outcome":null}`, CodeInvalidOutcome, "outcome"},
		{"outcome a bool", `{"outcome":true}`, CodeInvalidOutcome, "outcome"},
		{"outcome wrong case", `{"outcome":"Completed"}`, CodeInvalidOutcome, "outcome"},
		{"outcome twice", `{"outcome":"failed","outcome":"completed"}`, CodeInvalidOutcome, "outcome"},
		// 2. result_type
		{"result_type input_required", `{"result_type":"input_required"}`, CodeInvalidResultType, "result_type"},
		{"result_type null", `{"result_type":null}`, CodeInvalidResultType, "result_type"},
		{"result_type empty", `{"result_type":""}`, CodeInvalidResultType, "result_type"},
		{"result_type twice", `{"result_type":"complete","result_type":"complete"}`, CodeInvalidResultType, "result_type"},
		// 3. title
		{"title empty", `{"title":""}`, CodeInvalidTitle, "title"},
		{"title a number", `{"title":5}`, CodeInvalidTitle, "title"},
		{"title with LF", `{"title":"a\nb"}`, CodeInvalidTitle, "title"},
		{"title with CR", `{"title":"a\rb"}`, CodeInvalidTitle, "title"},
		{"title of 513 bytes", `{"title":"` + strings.Repeat("t", MaxTitleBytes+1) + `"}`, CodeInvalidTitle, "title"},
		{"title of 513 bytes in runes", `{"title":"` + strings.Repeat("é", 256) + `t"}`, CodeInvalidTitle, "title"},
		{"title twice", `{"title":"a","title":null}`, CodeInvalidTitle, "title"},
		// 4. metadata
		{"metadata an array", `{"metadata":[]}`, CodeInvalidMetadata, "metadata"},
		{"metadata a string", `{"metadata":"x"}`, CodeInvalidMetadata, "metadata"},
		{"metadata repeats a key", `{"metadata":{"checkpoint":1,"checkpoint":2}}`, CodeInvalidMetadata, "metadata.checkpoint"},
		{"metadata twice", `{"metadata":{},"metadata":{}}`, CodeInvalidMetadata, "metadata"},
		// 5. metadata size (docs/api.md#the-executor-plane: a 70 KiB metadata)
		{"metadata of 70 KiB", `{"metadata":` + bigMetadata + `}`, CodeMetadataTooLarge, "metadata"},
		// 6. is_error
		{"is_error a string", `{"is_error":"true"}`, CodeInvalidContent, "is_error"},
		{"is_error a number", `{"is_error":1}`, CodeInvalidContent, "is_error"},
		{"is_error null", `{"is_error":null}`, CodeInvalidContent, "is_error"},
		{"is_error twice", `{"is_error":true,"is_error":false}`, CodeInvalidContent, "is_error"},
		// 7. block count (scenario 15: 257 blocks)
		{"257 blocks", `{"content":` + many(MaxContentBlocks+1) + `}`, CodeTooManyContentBlocks, "content"},
		// 8. blocks
		{"content a number", `{"content":5}`, CodeInvalidContent, "content"},
		{"content an object", `{"content":{"type":"text","text":"x"}}`, CodeInvalidContent, "content"},
		{"content a bool", `{"content":false}`, CodeInvalidContent, "content"},
		{"content twice", `{"content":"a","content":"b"}`, CodeInvalidContent, "content"},
		{"block a string", `{"content":["x"]}`, CodeInvalidContent, "content[0]"},
		{"block null", `{"content":[null]}`, CodeInvalidContent, "content[0]"},
		{"block without type", `{"content":[{"text":"x"}]}`, CodeInvalidContent, "content[0].type"},
		{"block type a number", `{"content":[{"type":1}]}`, CodeInvalidContent, "content[0].type"},
		{"block type empty", `{"content":[{"type":""}]}`, CodeInvalidContent, "content[0].type"},
		{"block repeats a key", `{"content":[{"type":"text","text":"a","text":"b"}]}`, CodeInvalidContent, "content[0].text"},
		{"image block", `{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}]}`, CodeUnsupportedContentKind, "content[0].type"},
		{"audio block", `{"content":[{"type":"audio"}]}`, CodeUnsupportedContentKind, "content[0].type"},
		{"embedded resource", `{"content":[{"type":"text","text":"ok"},{"type":"resource","resource":{}}]}`, CodeUnsupportedContentKind, "content[1].type"},
		{"text without text", `{"content":[{"type":"text"}]}`, CodeInvalidContent, "content[0].text"},
		{"text a number", `{"content":[{"type":"text","text":3}]}`, CodeInvalidContent, "content[0].text"},
		{"text null", `{"content":[{"type":"text","text":null}]}`, CodeInvalidContent, "content[0].text"},
		{"text annotations a list", `{"content":[{"type":"text","text":"a","annotations":[]}]}`, CodeInvalidContent, "content[0].annotations"},
		{"text _meta a string", `{"content":[{"type":"text","text":"a","_meta":"x"}]}`, CodeInvalidContent, "content[0]._meta"},
		{"text unknown key", `{"content":[{"type":"text","text":"a","mimeType":"text/plain"}]}`, CodeInvalidContent, "content[0].mimeType"},
		{"link without uri", `{"content":[{"type":"resource_link","name":"a"}]}`, CodeInvalidContent, "content[0].uri"},
		{"link of https", `{"content":[{"type":"resource_link","uri":"https://example.test/a.png","name":"a"}]}`, CodeInvalidContent, "content[0].uri"},
		{"link of file", `{"content":[{"type":"resource_link","uri":"file:///etc/passwd","name":"a"}]}`, CodeInvalidContent, "content[0].uri"},
		{"link uppercase uuid", `{"content":[` + link(strings.ToUpper(upPNG)) + `]}`, CodeInvalidContent, "content[0].uri"},
		{"link short uuid", `{"content":[` + link(upPNG[:35]) + `]}`, CodeInvalidContent, "content[0].uri"},
		{"link uuid without hyphens", `{"content":[{"type":"resource_link","uri":"nexus://uploads/6f1b2c3d000040008000000000aa01ab","name":"a"}]}`, CodeInvalidContent, "content[0].uri"},
		{"link uri with suffix", `{"content":[` + link(upPNG+"/x") + `]}`, CodeInvalidContent, "content[0].uri"},
		{"link uri a number", `{"content":[{"type":"resource_link","uri":1,"name":"a"}]}`, CodeInvalidContent, "content[0].uri"},
		{"link without name", `{"content":[{"type":"resource_link","uri":"nexus://uploads/` + upPNG + `"}]}`, CodeInvalidContent, "content[0].name"},
		{"link name empty", `{"content":[{"type":"resource_link","uri":"nexus://uploads/` + upPNG + `","name":""}]}`, CodeInvalidContent, "content[0].name"},
		{"link name a number", `{"content":[{"type":"resource_link","uri":"nexus://uploads/` + upPNG + `","name":7}]}`, CodeInvalidContent, "content[0].name"},
		{"link mimeType a number", `{"content":[` + link(upPNG, `"mimeType":1`) + `]}`, CodeInvalidContent, "content[0].mimeType"},
		{"link size negative", `{"content":[` + link(upPNG, `"size":-1`) + `]}`, CodeInvalidContent, "content[0].size"},
		{"link size a fraction", `{"content":[` + link(upPNG, `"size":1.5`) + `]}`, CodeInvalidContent, "content[0].size"},
		{"link size a string", `{"content":[` + link(upPNG, `"size":"10"`) + `]}`, CodeInvalidContent, "content[0].size"},
		{"link size beyond int64", `{"content":[` + link(upPNG, `"size":99999999999999999999`) + `]}`, CodeInvalidContent, "content[0].size"},
		{"link title a bool", `{"content":[` + link(upPNG, `"title":true`) + `]}`, CodeInvalidContent, "content[0].title"},
		{"link description null", `{"content":[` + link(upPNG, `"description":null`) + `]}`, CodeInvalidContent, "content[0].description"},
		{"link annotations a string", `{"content":[` + link(upPNG, `"annotations":"x"`) + `]}`, CodeInvalidContent, "content[0].annotations"},
		{"link _meta a list", `{"content":[` + link(upPNG, `"_meta":[]`) + `]}`, CodeInvalidContent, "content[0]._meta"},
		{"link unknown key", `{"content":[` + link(upPNG, `"text":"x"`) + `]}`, CodeInvalidContent, "content[0].text"},
		{"structured_content twice", `{"structured_content":1,"structured_content":2}`, CodeInvalidContent, "structured_content"},
		// 9. result size
		{"result over 1 MiB", `{"content":"` + strings.Repeat("r", MaxResultBytes) + `"}`, CodeResultTooLarge, ""},
		{"structured over 1 MiB", `{"structured_content":"` + strings.Repeat("r", MaxResultBytes) + `"}`, CodeResultTooLarge, ""},
		// 10. ownership (scenario 15: another executor's capture beside the runner's own)
		{"foreign upload", `{"content":[` + link(upPNG) + `,` + link(upOther) + `]}`, CodeUnknownResultUpload, "content[1].uri"},
		// 11. unstorable (scenario 16)
		{"NUL in text", `{"content":"a\u0000b"}`, CodeResultUnstorable, "content"},
		{"NUL in a block", `{"content":[{"type":"text","text":"ok"},{"type":"text","text":"\u0000"}]}`, CodeResultUnstorable, "content[1]"},
		{"lone high surrogate", `{"content":"\ud800"}`, CodeResultUnstorable, "content"},
		{"lone low surrogate", `{"content":[{"type":"text","text":"\udfff"}]}`, CodeResultUnstorable, "content[0]"},
		{"NUL in a link name", `{"content":[` + strings.Replace(link(upPNG), "page.png", `p\u0000`, 1) + `]}`, CodeResultUnstorable, "content[0]"},
		{"NUL in annotations", `{"content":[{"type":"text","text":"a","annotations":{"k":"\u0000"}}]}`, CodeResultUnstorable, "content[0]"},
		{"NUL in structured_content", `{"structured_content":{"a":["\u0000"]}}`, CodeResultUnstorable, "structured_content"},
		{"NUL in a structured key", `{"structured_content":{"\u0000":1}}`, CodeResultUnstorable, "structured_content"},
		{"NUL in title", `{"title":"a\u0000"}`, CodeResultUnstorable, "title"},
		{"NUL in metadata", `{"metadata":{"checkpoint":{"cwd":"\u0000"}}}`, CodeResultUnstorable, "metadata"},
		{"invalid UTF-8 in text", "{\"content\":\"a\xffb\"}", CodeResultUnstorable, ""},
		{"invalid UTF-8 in an ignored key", "{\"content\":\"ok\",\"note\":\"\xc3\"}", CodeResultUnstorable, ""},
		{"NUL in a blank result", `{"content":" \u0000 "}`, CodeResultUnstorable, "content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := validateBody([]byte(tt.body), ownAll)
			if err == nil {
				t.Fatalf("accepted: %+v", r)
			}
			code, path := refusalOf(t, err)
			if code != tt.code || path != tt.path {
				t.Errorf("refusal = %s at %q, want %s at %q (%v)", code, path, tt.code, tt.path, err)
			}
			ref, _ := refusal.As(err)
			if ref.Kind != refusal.Unprocessable {
				t.Errorf("kind = %v, want Unprocessable (422)", ref.Kind)
			}
			if IsUnstorable(err) != (tt.code == CodeResultUnstorable) {
				t.Errorf("IsUnstorable = %v", IsUnstorable(err))
			}
		})
	}
}

// TestValidateOrder pairs each refusal with a later one in the same body: the earlier check
// decides (docs/api.md#the-result-envelope).
func TestValidateOrder(t *testing.T) {
	t.Parallel()
	fields := []struct {
		code, path, member string
	}{
		{CodeInvalidOutcome, "outcome", `"outcome":"maybe"`},
		{CodeInvalidResultType, "result_type", `"result_type":"input_required"`},
		{CodeInvalidTitle, "title", `"title":"a\nb"`},
		{CodeInvalidMetadata, "metadata", `"metadata":[]`},
		{CodeInvalidContent, "is_error", `"is_error":"yes"`},
		{CodeTooManyContentBlocks, "content", `"content":[` + strings.Repeat(`{"type":"image"},`, MaxContentBlocks) + `{"type":"image"}]`},
		{CodeUnsupportedContentKind, "content[0].type", `"content":[{"type":"image"},{"type":"text"}]`},
		{CodeResultTooLarge, "", `"structured_content":"` + strings.Repeat("r", MaxResultBytes) + `"`},
		{CodeUnknownResultUpload, "content[0].uri", `"content":[` + link(upOther, `"title":"\u0000"`) + `]`},
	}
	for i, earlier := range fields {
		for _, later := range fields[i+1:] {
			if strings.HasPrefix(earlier.member, `"content"`) && strings.HasPrefix(later.member, `"content"`) {
				continue // one key cannot hold both
			}
			body := "{" + later.member + "," + earlier.member + "}"
			_, err := validateBody([]byte(body), ownAll)
			code, path := refusalOf(t, err)
			if code != earlier.code || path != earlier.path {
				t.Errorf("%s before %s: got %s at %q", earlier.code, later.code, code, path)
			}
		}
	}
	// metadata_too_large comes after invalid_title and before is_error.
	big := `"metadata":{"b":"` + strings.Repeat("m", MaxMetadataBytes) + `"}`
	for body, want := range map[string]string{
		`{` + big + `,"title":""}`:                                CodeInvalidTitle,
		`{` + big + `,"is_error":1}`:                              CodeMetadataTooLarge,
		`{"content":[{"type":"text","text":1},{"type":"image"}]}`: CodeInvalidContent,
		`{"content":[{"type":"image"},{"type":"text","text":1}]}`: CodeUnsupportedContentKind,
		`{"content":"\u0000","outcome":"x"}`:                      CodeInvalidOutcome,
	} {
		_, err := validateBody([]byte(body), ownAll)
		if code, _ := refusalOf(t, err); code != want {
			t.Errorf("%.60s…: got %s, want %s", body, code, want)
		}
	}
}

func TestValidateOwnership(t *testing.T) {
	t.Parallel()
	t.Run("asked once with distinct ids in link order", func(t *testing.T) {
		t.Parallel()
		var asked [][]string
		owned := func(ids []string) ([]string, error) {
			asked = append(asked, ids)
			return ids, nil
		}
		body := `{"content":[` + link(upText) + `,` + link(upPNG) + `,` + link(upText) + `]}`
		r, err := validateBody([]byte(body), owned)
		if err != nil {
			t.Fatal(err)
		}
		want := [][]string{{upText, upPNG}}
		if diff := cmp.Diff(want, asked); diff != "" {
			t.Errorf("asked (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{upText, upPNG}, r.Uploads); diff != "" {
			t.Errorf("Uploads (-want +got):\n%s", diff)
		}
	})
	t.Run("not asked without links or after a refusal", func(t *testing.T) {
		t.Parallel()
		owned := func([]string) ([]string, error) {
			t.Error("ownership was asked")
			return nil, nil
		}
		for _, body := range []string{`{"content":"ok"}`, `{"content":[` + link(upPNG) + `],"title":""}`, `{"content":[` + link(upPNG) + `,{"type":"image"}]}`} {
			_, _ = validateBody([]byte(body), owned)
		}
	})
	t.Run("whole or nothing", func(t *testing.T) {
		t.Parallel()
		owned := func([]string) ([]string, error) { return []string{upPNG}, nil }
		r, err := validateBody([]byte(`{"content":[`+link(upPNG)+`,`+link(upOther)+`]}`), owned)
		if code, path := refusalOf(t, err); code != CodeUnknownResultUpload || path != "content[1].uri" || r != nil {
			t.Errorf("got %v, %s at %s", r, code, path)
		}
	})
	t.Run("nil owns nothing", func(t *testing.T) {
		t.Parallel()
		_, err := validateBody([]byte(`{"content":[`+link(upPNG)+`]}`), nil)
		if code, path := refusalOf(t, err); code != CodeUnknownResultUpload || path != "content[0].uri" {
			t.Errorf("got %s at %s", code, path)
		}
		if _, err := validateBody([]byte(`{"content":"no links"}`), nil); err != nil {
			t.Errorf("a result without links needs no ownership: %v", err)
		}
	})
	t.Run("a store fault is not a refusal", func(t *testing.T) {
		t.Parallel()
		fault := errors.New("connection reset")
		_, err := validateBody([]byte(`{"content":[`+link(upPNG)+`]}`), func([]string) ([]string, error) { return nil, fault })
		if !errors.Is(err, fault) {
			t.Fatalf("err = %v", err)
		}
		if _, ok := refusal.As(err); ok {
			t.Error("a store fault became a refusal")
		}
	})
}

func TestWords(t *testing.T) {
	t.Parallel()
	got := []string{CodeInvalidOutcome, CodeInvalidResultType, CodeInvalidTitle, CodeInvalidMetadata, CodeMetadataTooLarge,
		CodeInvalidContent, CodeTooManyContentBlocks, CodeUnsupportedContentKind, CodeResultTooLarge, CodeUnknownResultUpload,
		CodeResultUnstorable, UnstorableErrorKey, UnstorableDetail, UnstorableClosedMessage, UploadURIPrefix}
	want := []string{"invalid_outcome", "invalid_result_type", "invalid_title", "invalid_metadata", "metadata_too_large",
		"invalid_content", "too_many_content_blocks", "unsupported_content_kind", "result_too_large", "unknown_result_upload",
		"result_unstorable", "result_unstorable", "unsupported_text: the result's bytes cannot be stored",
		"The result holds text that cannot be stored; the task has been closed as failed.", "nexus://uploads/"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("words (-want +got):\n%s", diff)
	}
	limits := []int{MaxResultBytes, MaxBodyBytes, MaxContentBlocks, MaxTitleBytes, MaxMetadataBytes, MaxFailureDetailBytes}
	if diff := cmp.Diff([]int{1048576, 2097152, 256, 512, 65536, 1024}, limits); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
}

func TestBounds(t *testing.T) {
	t.Parallel()
	blocks := func(n int) string {
		items := make([]string, n)
		for i := range items {
			items[i] = fmt.Sprintf(`{"type":"text","text":"%d"}`, i)
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	// {"content":[{"text":"…","type":"text"}]} is 39 bytes of canonical JSON around the text.
	atResultBound := strings.Repeat("r", MaxResultBytes-39)
	// {"b":"…"} is 8 bytes around the string.
	atMetadataBound := `{"b":"` + strings.Repeat("m", MaxMetadataBytes-8) + `"}`
	for _, body := range []string{
		`{"content":` + blocks(MaxContentBlocks) + `}`,
		`{"title":"` + strings.Repeat("t", MaxTitleBytes) + `"}`,
		`{"title":"` + strings.Repeat("é", MaxTitleBytes/2) + `"}`,
		`{"title":"tab\tis one line"}`,
		`{"metadata":` + atMetadataBound + `}`,
		`{"content":"` + atResultBound + `"}`,
		`{"content":[{"type":"text","text":"` + atResultBound + `"}]}`,
	} {
		if _, err := validateBody([]byte(body), ownAll); err != nil {
			t.Errorf("%.50s…: %v", body, err)
		}
	}
	over := []string{
		`{"content":"` + atResultBound + `r"}`,
		`{"content":[{"type":"text","text":"` + atResultBound + `r"}]}`,
		`{"content":"` + atResultBound + `","structured_content":0}`,
	}
	for _, body := range over {
		if code, _ := refusalOf(t, func() error { _, err := validateBody([]byte(body), ownAll); return err }()); code != CodeResultTooLarge {
			t.Errorf("%.50s…: %s, want result_too_large", body, code)
		}
	}
	_, err := validateBody([]byte(`{"metadata":{"b":"`+strings.Repeat("m", MaxMetadataBytes-7)+`"}}`), ownAll)
	if code, _ := refusalOf(t, err); code != CodeMetadataTooLarge {
		t.Errorf("one byte over the metadata bound: %s", code)
	}
}

func TestCanonicalLen(t *testing.T) {
	t.Parallel()
	for _, b := range []Block{
		TextBlock("plain"), TextBlock("esc\"\\\n\x01é"), TextBlock(""),
		{Type: TypeText, Text: "a", Annotations: []byte(`{"b":1,"a":2}`)},
		{Type: TypeResourceLink, URI: UploadURIPrefix + upPNG, Name: "n", Size: ptr(int64(3)), Meta: []byte(`{"z":[1.0]}`)},
	} {
		if got, want := b.canonicalLen(), len(b.canonical()); got != want {
			t.Errorf("%+v: canonicalLen %d, canonical %d", b, got, want)
		}
	}
}
