package envelope

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
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
// door's: Decode ignores it, and the doors refuse every key they do not know.
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
// Decode reads the values; a test holds these tags equal to the keys it reads.
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

// Validate judges a submitted result by the grammar of docs/api.md#the-result-envelope, once, and
// returns it as it is stored. A refusal is a *refusal.Error of kind Unprocessable with the word of
// docs/api.md#the-result-envelope and, where there is one, the offending field as path. Checks run
// in the documented order, whether the submission came from a body (Decode) or from typed values:
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
//  11. result_unstorable     bytes that are not UTF-8, or a string in content,
//     structured_content, title or metadata that holds U+0000 or an unpaired surrogate escape
//
// Before them, a body over MaxBodyBytes is 413 content_too_large and a body that is not one JSON
// object is 400 parameter_invalid: the doors answer both before a body is decoded. Every refusal
// but the last leaves a tool row's park standing; IsUnstorable tells the caller when to close it.
// owned is called once, only when the result links an upload and every earlier check passed; a nil
// owned owns nothing. On success the caller binds exactly r.Uploads; on any refusal it binds
// nothing.
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
func Validate(s *Submission, owned UploadOwnership) (*Result, error) {
	r := &Result{Outcome: OutcomeCompleted}

	// 1. outcome
	if err := s.faultAt(checkOutcome); err != nil {
		return nil, err
	}
	switch s.Outcome {
	case "":
	case OutcomeCompleted, OutcomeFailed:
		r.Outcome = s.Outcome
	default:
		return nil, errOutcome()
	}
	// 2. result_type: validated, never stored.
	if err := s.faultAt(checkResultType); err != nil {
		return nil, err
	}
	// 3. title
	if err := s.faultAt(checkTitle); err != nil {
		return nil, err
	}
	if s.Title != nil {
		t := *s.Title
		if t == "" || len(t) > MaxTitleBytes || strings.ContainsAny(t, "\r\n") {
			return nil, errTitle()
		}
		r.Title = t
	}
	// 4, 5. metadata
	if err := s.faultAt(checkMetadata); err != nil {
		return nil, err
	}
	if s.Metadata != nil {
		md, err := metadataOf(s.Metadata)
		if err != nil {
			return nil, err
		}
		r.Metadata = md
	}
	// 6. is_error
	if err := s.faultAt(checkIsError); err != nil {
		return nil, err
	}
	r.IsError = s.IsError
	// 7, 8. content
	if err := s.faultAt(checkContent); err != nil {
		return nil, err
	}
	blocks, rerr := s.content()
	if rerr != nil {
		return nil, rerr
	}
	if err := s.faultAt(checkStructured); err != nil {
		return nil, err
	}
	if s.StructuredContent != nil {
		if !s.decoded && !json.Valid(s.StructuredContent) {
			return nil, refuse(CodeInvalidContent, keyStructuredContent, "structured_content is one JSON value.")
		}
		r.StructuredContent = compact(s.StructuredContent)
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
	// 11. what the store cannot keep: judged on a body's bytes by Decode, on typed values here.
	if err := s.faultAt(checkStorable); err != nil {
		return nil, err
	}
	if !s.decoded {
		if err := s.storable(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func errOutcome() *refusal.Error {
	return refuse(CodeInvalidOutcome, keyOutcome, `outcome is "completed" or "failed".`)
}

func errTitle() *refusal.Error {
	return refuse(CodeInvalidTitle, keyTitle, fmt.Sprintf("title is one line of 1..%d bytes.", MaxTitleBytes))
}

func errMetadata() *refusal.Error {
	return refuse(CodeInvalidMetadata, keyMetadata, "metadata is a JSON object.")
}

// metadataOf applies checks 4 and 5 to a metadata value and returns it as stored.
func metadataOf(raw json.RawMessage) (json.RawMessage, *refusal.Error) {
	md, err := jsonwire.SplitObject(raw)
	if err != nil {
		return nil, errMetadata()
	}
	if k, rep := md.Repeated(); rep {
		return nil, refuse(CodeInvalidMetadata, keyMetadata+"."+k, "metadata."+k+" is given more than once.")
	}
	canon, _, err := jsonwire.Canonical(raw)
	if err != nil {
		return nil, errMetadata()
	}
	if len(canon) > MaxMetadataBytes {
		return nil, refuse(CodeMetadataTooLarge, keyMetadata, fmt.Sprintf("metadata is %d bytes of canonical JSON, over the bound of %d.", len(canon), MaxMetadataBytes))
	}
	return compact(raw), nil
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
