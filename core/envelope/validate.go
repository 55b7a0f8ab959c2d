package envelope

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/sdk/announce/jsonwire"
)

// Outcome is how the executor says the call went: it ran (completed, with is_error saying
// whether it reports an error), or it could not run at all (failed).
type Outcome string

const (
	OutcomeCompleted Outcome = "completed"
	OutcomeFailed    Outcome = "failed"
)

// resultTypeComplete is the one value result_type may take.
const resultTypeComplete = "complete"

// Top-level keys of the result part of a body. Any other key (claim_token included) is the
// door's: Validate ignores it, and the doors refuse every key they do not know.
const (
	keyContent           = "content"
	keyStructuredContent = "structured_content"
	keyResultType        = "result_type"
	keyIsError           = "is_error"
	keyOutcome           = "outcome"
	keyTitle             = "title"
	keyMetadata          = "metadata"
	keyCheckpoint        = "checkpoint"
)

var resultKeys = []string{keyContent, keyStructuredContent, keyResultType, keyIsError, keyOutcome, keyTitle, keyMetadata}

// Keys are the result's top-level keys as a request type: a door embeds it beside its own keys
// (the commit's claim_token) so that its one strict body decoding refuses any other key.
// Validate judges the values; a test holds these tags equal to the keys it reads.
type Keys struct {
	Content           json.RawMessage `json:"content"`
	StructuredContent json.RawMessage `json:"structured_content"`
	ResultType        json.RawMessage `json:"result_type"`
	IsError           json.RawMessage `json:"is_error"`
	Outcome           json.RawMessage `json:"outcome"`
	Title             json.RawMessage `json:"title"`
	Metadata          json.RawMessage `json:"metadata"`
}

// Result is a validated result, normalised to what is stored.
type Result struct {
	// Content is the block list as stored; nil when the result is blank, in which case no
	// body is written and the model reads nothing (docs/api.md#the-result-envelope). A bare string is
	// stored as one text block.
	Content []Block
	// StructuredContent is the structured value exactly as sent (compacted); nil when absent.
	// JSON null and false are kept. It never reaches a model.
	StructuredContent json.RawMessage
	IsError           bool
	Outcome           Outcome
	// Title is the one-line UI header; "" when absent (an empty title is refused).
	Title string
	// Metadata is the model-invisible object exactly as sent (compacted); nil when absent.
	Metadata json.RawMessage
	// Uploads lists the distinct upload public ids the links name, in first-link order: what
	// the caller binds when the result settles its row.
	Uploads []string
}

// UploadOwnership answers, for the distinct upload ids a result links, which of them the
// committer may bind, and returns those: on the commit door the executor's own complete,
// unreclaimed captures (plus, on the final commit of a tool row that owns child operations,
// uploads already bound to those children's settled results); on the resolution door the
// member's own uploads. The order of the answer is free. An error is a store fault: Validate
// returns it as is, and it is not a refusal.
type UploadOwnership func(ids []string) (own []string, err error)

// Validate checks the result part of a commit or resolution body (a JSON object; other keys such as
// claim_token are ignored) and returns the result as it is stored. A refusal is a *refusal.Error of
// kind Unprocessable with the word of docs/api.md#the-result-envelope and, where there is one, the
// offending field as path. Checks run in the documented order:
//
//  1. invalid_outcome        outcome not "completed" or "failed"
//  2. invalid_result_type    result_type present and not "complete" (null included)
//  3. invalid_title          title not a string, empty, over MaxTitleBytes, or with CR or LF
//  4. invalid_metadata       metadata not an object
//  5. metadata_too_large     metadata over MaxMetadataBytes of canonical JSON
//  6. invalid_content        is_error not a boolean (path "is_error")
//  7. too_many_content_blocks more than MaxContentBlocks blocks
//  8. invalid_content / unsupported_content_kind, block by block, the first bad block deciding
//  9. result_too_large       the stored content and structured_content over MaxResultBytes
//  10. unknown_result_upload a link to an upload owned does not include (whole or nothing)
//  11. result_unstorable     the body is not UTF-8, or a string in content,
//     structured_content, title or metadata holds U+0000 or an unpaired surrogate escape
//
// Before them, a body over MaxBodyBytes is 413 content_too_large and a body that is not one
// JSON object is 400 parameter_invalid; the doors check both first, so these only guard
// in-process callers. Every refusal but the last leaves a tool row's park standing;
// IsUnstorable tells the caller when to close it. owned is called once, only when the result
// links an upload and every earlier check passed; a nil owned owns nothing. On success the
// caller binds exactly r.Uploads; on any refusal it binds nothing.
//
// Decisions the documented grammar leaves open: absent, null and blank content all read as no
// body; null for outcome or is_error is mistyped (only content, title and metadata list null);
// a top-level result key given twice is refused with that field's word (invalid_content for
// content, is_error and structured_content) because two readers of one body could otherwise
// disagree on its value, and so is a metadata object that repeats a top-level key
// (invalid_metadata); the reserved checkpoint key may hold any JSON value; result_too_large
// measures the stored form (the normalised block list, without the body of a blank result), so
// that a bare string and its text block meet the bound identically; whitespace is Unicode
// White_Space.
func Validate(body []byte, owned UploadOwnership) (*Result, error) {
	if len(body) > MaxBodyBytes {
		return nil, refusal.Newf(refusal.TooLarge, refusal.CodeContentTooLarge, "The body is over %d bytes.", MaxBodyBytes)
	}
	members, err := jsonwire.SplitObject(body)
	if err != nil {
		return nil, refusal.New(refusal.BadRequest, refusal.CodeParameterInvalid, "The request body must be a JSON object.")
	}
	f := fieldsOf(members)
	r := &Result{Outcome: OutcomeCompleted}

	// 1. outcome
	if raw, ok := f.raw[keyOutcome]; ok {
		s, isString := jsonwire.DecodeString(raw)
		if f.repeated[keyOutcome] || !isString || (s != string(OutcomeCompleted) && s != string(OutcomeFailed)) {
			return nil, refuse(CodeInvalidOutcome, keyOutcome, `outcome is "completed" or "failed".`)
		}
		r.Outcome = Outcome(s)
	}
	// 2. result_type: validated, never stored.
	if raw, ok := f.raw[keyResultType]; ok {
		if s, isString := jsonwire.DecodeString(raw); f.repeated[keyResultType] || !isString || s != resultTypeComplete {
			return nil, refuse(CodeInvalidResultType, keyResultType, `result_type, when sent, is "complete": multi-round tool requests are not implemented.`)
		}
	}
	// 3. title
	if raw, ok := f.raw[keyTitle]; ok && !(isNull(raw) && !f.repeated[keyTitle]) {
		s, isString := jsonwire.DecodeString(raw)
		if f.repeated[keyTitle] || !isString || s == "" || len(s) > MaxTitleBytes || strings.ContainsAny(s, "\r\n") {
			return nil, refuse(CodeInvalidTitle, keyTitle, fmt.Sprintf("title is one line of 1..%d bytes.", MaxTitleBytes))
		}
		r.Title = s
	}
	// 4, 5. metadata
	if raw, ok := f.raw[keyMetadata]; ok && !(isNull(raw) && !f.repeated[keyMetadata]) {
		md, err := jsonwire.SplitObject(raw)
		if f.repeated[keyMetadata] || err != nil {
			return nil, refuse(CodeInvalidMetadata, keyMetadata, "metadata is a JSON object.")
		}
		if k, rep := md.Repeated(); rep {
			return nil, refuse(CodeInvalidMetadata, keyMetadata+"."+k, "metadata."+k+" is given more than once.")
		}
		canon, _, err := jsonwire.Canonical(raw)
		if err != nil {
			return nil, refuse(CodeInvalidMetadata, keyMetadata, "metadata is a JSON object.")
		}
		if len(canon) > MaxMetadataBytes {
			return nil, refuse(CodeMetadataTooLarge, keyMetadata, fmt.Sprintf("metadata is %d bytes of canonical JSON, over the bound of %d.", len(canon), MaxMetadataBytes))
		}
		r.Metadata = compact(raw)
	}
	// 6. is_error
	if raw, ok := f.raw[keyIsError]; ok {
		switch v := strings.TrimSpace(string(raw)); {
		case f.repeated[keyIsError] || (v != "true" && v != "false"):
			return nil, refuse(CodeInvalidContent, keyIsError, "is_error is true or false.")
		default:
			r.IsError = v == "true"
		}
	}
	// 7, 8. content
	blocks, rerr := parseContent(f)
	if rerr != nil {
		return nil, rerr
	}
	if raw, ok := f.raw[keyStructuredContent]; ok {
		if f.repeated[keyStructuredContent] {
			return nil, refuse(CodeInvalidContent, keyStructuredContent, "structured_content is given more than once.")
		}
		r.StructuredContent = compact(raw)
	}
	if !blank(blocks) {
		r.Content = blocks
	}
	// 9. the result bound, on the stored form.
	if n := r.resultBytes(); n > MaxResultBytes {
		return nil, refuse(CodeResultTooLarge, "", fmt.Sprintf("The result is %d bytes of canonical JSON, over the bound of %d.", n, MaxResultBytes))
	}
	// 10. ownership, whole or nothing.
	r.Uploads = uploadsOf(r.Content)
	if err := r.checkOwnership(owned); err != nil {
		return nil, err
	}
	// 11. what the store cannot keep.
	if err := unstorable(body, f); err != nil {
		return nil, err
	}
	return r, nil
}

// fields are the first occurrence of each result key and which keys were repeated.
type fields struct {
	raw      map[string]json.RawMessage
	repeated map[string]bool
}

func fieldsOf(members jsonwire.Members) fields {
	f := fields{raw: map[string]json.RawMessage{}, repeated: map[string]bool{}}
	for _, m := range members {
		if !contains(resultKeys, m.Key) {
			continue
		}
		if _, seen := f.raw[m.Key]; seen {
			f.repeated[m.Key] = true
			continue
		}
		f.raw[m.Key] = m.Raw
	}
	return f
}

// parseContent applies checks 7 and 8 and returns the blocks, a bare string normalised to
// one text block.
func parseContent(f fields) ([]Block, *refusal.Error) {
	raw, ok := f.raw[keyContent]
	if !ok {
		return nil, nil
	}
	if f.repeated[keyContent] {
		return nil, refuse(CodeInvalidContent, keyContent, "content is given more than once.")
	}
	switch firstNonSpace(raw) {
	case 'n':
		if isNull(raw) {
			return nil, nil
		}
	case '"':
		s, _ := jsonwire.DecodeString(raw)
		return []Block{TextBlock(s)}, nil
	case '[':
		items, err := jsonwire.SplitArray(raw)
		if err != nil {
			break
		}
		if len(items) > MaxContentBlocks {
			return nil, refuse(CodeTooManyContentBlocks, keyContent, fmt.Sprintf("content holds %d blocks, more than %d.", len(items), MaxContentBlocks))
		}
		blocks := make([]Block, 0, len(items))
		for i, item := range items {
			b, rerr := parseBlock(i, item)
			if rerr != nil {
				return nil, rerr
			}
			blocks = append(blocks, b)
		}
		return blocks, nil
	}
	return nil, refuse(CodeInvalidContent, keyContent, "content is a string or a list of content blocks.")
}

// blank reports whether blocks write no body: no link at all (a media link rides as an
// attachment and a non-media link projects as JSON, so any link is a body) and every text
// whitespace.
func blank(blocks []Block) bool {
	for _, b := range blocks {
		if b.IsLink() || strings.TrimSpace(b.Text) != "" {
			return false
		}
	}
	return true
}

// resultBytes is the canonical JSON size of {content, structured_content} as stored.
func (r *Result) resultBytes() int {
	n := len(`{}`)
	if r.Content != nil {
		n += len(`"content":[]`)
		for i, b := range r.Content {
			if i > 0 {
				n++
			}
			n += b.canonicalLen()
		}
	}
	if r.StructuredContent != nil {
		if r.Content != nil {
			n++
		}
		canon, _, err := jsonwire.Canonical(r.StructuredContent)
		if err != nil {
			canon = r.StructuredContent
		}
		n += len(`"structured_content":`) + len(canon)
	}
	return n
}

func uploadsOf(blocks []Block) []string {
	var ids []string
	seen := map[string]bool{}
	for _, b := range blocks {
		if id := b.UploadID(); id != "" && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids
}

// checkOwnership asks owned about the linked ids and refuses at the first link whose upload
// is not among the answer.
func (r *Result) checkOwnership(owned UploadOwnership) error {
	if len(r.Uploads) == 0 {
		return nil
	}
	own := map[string]bool{}
	if owned != nil {
		ids, err := owned(append([]string(nil), r.Uploads...))
		if err != nil {
			return fmt.Errorf("envelope: checking upload ownership: %w", err)
		}
		for _, id := range ids {
			own[id] = true
		}
	}
	for i, b := range r.Content {
		if id := b.UploadID(); id != "" && !own[id] {
			p := fmt.Sprintf("content[%d].uri", i)
			return refuse(CodeUnknownResultUpload, p, fmt.Sprintf("%s: %s is not an upload this result may bind; nothing is bound.", p, b.URI))
		}
	}
	return nil
}

// unstorable applies check 11: the raw body must be UTF-8, and no string in the four stored
// fields may hold U+0000 or an unpaired surrogate escape (the decoder would silently turn
// the latter into U+FFFD, so the raw text is what is read).
func unstorable(body []byte, f fields) error {
	if !utf8.Valid(body) {
		return refuseUnstorable("")
	}
	if raw, ok := f.raw[keyContent]; ok {
		if items, err := jsonwire.SplitArray(raw); err == nil {
			for i, item := range items {
				if !storable(item) {
					return refuseUnstorable(fmt.Sprintf("content[%d]", i))
				}
			}
		} else if !storable(raw) {
			return refuseUnstorable(keyContent)
		}
	}
	for _, k := range []string{keyStructuredContent, keyTitle, keyMetadata} {
		if raw, ok := f.raw[k]; ok && !storable(raw) {
			return refuseUnstorable(k)
		}
	}
	return nil
}

func storable(raw json.RawMessage) bool {
	facts, err := jsonwire.Scan(raw)
	return err == nil && !facts.Unstorable
}

func refuseUnstorable(path string) *refusal.Error {
	msg := "The result holds text that cannot be stored (U+0000, an unpaired surrogate or bytes that are not UTF-8)."
	return refuse(CodeResultUnstorable, path, msg)
}

// Checkpoint returns the reserved metadata key: the runner's own record of its environment
// before the call, verbatim.
func (r *Result) Checkpoint() (json.RawMessage, bool) {
	if r.Metadata == nil {
		return nil, false
	}
	md, err := jsonwire.SplitObject(r.Metadata)
	if err != nil {
		return nil, false
	}
	v, ok := md.Get(keyCheckpoint)
	return v, ok
}

// ContentJSON is the stored content: the block array with fixed key order and minimal
// escapes, or nil when the result is blank and no body is written.
func (r *Result) ContentJSON() []byte {
	if r.Content == nil {
		return nil
	}
	return appendContent(nil, r.Content)
}
