package envelope

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Submission is a result as its committer hands it in, before Validate judges it. A door builds
// it from the members of the body it decoded (Decode); an in-process committer that holds typed
// values, the plugin host's executor plane, fills its fields itself and never writes JSON. Either
// way one Validate applies the one grammar to it, in the documented order.
//
// Outcome is "" when absent (completed). Content is given as Text, one string, or as Blocks, a
// list; neither is no content, both is invalid_content. Title is nil when absent.
// StructuredContent (any JSON value) and Metadata (a JSON object) are kept as sent; nil when
// absent.
type Submission struct {
	Outcome           Outcome
	IsError           bool
	Title             *string
	Text              *string
	Blocks            []Block
	StructuredContent json.RawMessage
	Metadata          json.RawMessage

	// decoded marks a Submission Decode built: its blocks and what the store can keep were
	// judged on the body's own bytes, which typed values no longer show.
	decoded bool
	// fault is the first refusal Decode found in the body's own form (a key given twice, a
	// value of the wrong JSON type, a malformed block, bytes the store cannot keep), and at
	// names the check it belongs to, where Validate answers it.
	fault *refusal.Error
	at    check
}

// check names the place of a refusal in Validate's order.
type check int

const (
	checkNone check = iota
	checkOutcome
	checkResultType
	checkTitle
	checkMetadata
	checkIsError
	checkContent
	checkStructured
	checkStorable
)

// faultAt answers Decode's refusal when it belongs to check c.
func (s *Submission) faultAt(c check) error {
	if s.fault != nil && s.at == c {
		return s.fault
	}
	return nil
}

// Decode reads the result's keys of a body's members (a JSON object a door split once, with
// keys the door allows): the first occurrence of each result key, every other key ignored. It
// never fails: what only the body's bytes show is kept for Validate to answer at its place, so
// that a door may decode before it looks its row up and still refuse in the documented order.
func Decode(members jsonwire.Members) *Submission {
	s := &Submission{decoded: true}
	f := fieldsOf(members)
	s.fault, s.at = s.decode(f, members)
	return s
}

// decode fills s from the body's fields in check order, up to the first refusal of the body's
// own form, which it returns with its check. The values' rules (a title's length, metadata's
// size) are Validate's, on the typed values, so that both kinds of submission meet them alike.
func (s *Submission) decode(f fields, members jsonwire.Members) (*refusal.Error, check) {
	if raw, ok := f.raw[keyOutcome]; ok {
		v, isString := jsonwire.DecodeString(raw)
		if f.repeated[keyOutcome] || !isString || v == "" {
			return errOutcome(), checkOutcome
		}
		s.Outcome = Outcome(v)
	}
	if raw, ok := f.raw[keyResultType]; ok {
		if v, isString := jsonwire.DecodeString(raw); f.repeated[keyResultType] || !isString || v != resultTypeComplete {
			return refuse(CodeInvalidResultType, keyResultType, `result_type, when sent, is "complete": multi-round tool requests are not implemented.`), checkResultType
		}
	}
	if raw, ok := f.raw[keyTitle]; ok && !(isNull(raw) && !f.repeated[keyTitle]) {
		v, isString := jsonwire.DecodeString(raw)
		if f.repeated[keyTitle] || !isString {
			return errTitle(), checkTitle
		}
		s.Title = &v
	}
	if raw, ok := f.raw[keyMetadata]; ok && !(isNull(raw) && !f.repeated[keyMetadata]) {
		if f.repeated[keyMetadata] {
			return errMetadata(), checkMetadata
		}
		s.Metadata = raw
	}
	if raw, ok := f.raw[keyIsError]; ok {
		switch v := strings.TrimSpace(string(raw)); {
		case f.repeated[keyIsError] || (v != "true" && v != "false"):
			return refuse(CodeInvalidContent, keyIsError, "is_error is true or false."), checkIsError
		default:
			s.IsError = v == "true"
		}
	}
	items, rerr := s.decodeContent(f)
	if rerr != nil {
		return rerr, checkContent
	}
	if raw, ok := f.raw[keyStructuredContent]; ok {
		if f.repeated[keyStructuredContent] {
			return refuse(CodeInvalidContent, keyStructuredContent, "structured_content is given more than once."), checkStructured
		}
		s.StructuredContent = raw
	}
	if rerr := unstorable(members, f, items); rerr != nil {
		return rerr, checkStorable
	}
	return nil, checkNone
}

// fields are the first occurrence of each result key and which keys were repeated.
type fields struct {
	raw      map[string]json.RawMessage
	repeated map[string]bool
}

func fieldsOf(members jsonwire.Members) fields {
	f := fields{raw: make(map[string]json.RawMessage, len(resultKeys)), repeated: map[string]bool{}}
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

// decodeContent applies checks 7 and 8 to a body's content and fills Text or Blocks; it answers
// the list's items, which check 11 reads again.
func (s *Submission) decodeContent(f fields) ([]json.RawMessage, *refusal.Error) {
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
		v, _ := jsonwire.DecodeString(raw)
		s.Text = &v
		return nil, nil
	case '[':
		items, err := jsonwire.SplitArray(raw)
		if err != nil {
			break
		}
		if len(items) > MaxContentBlocks {
			return nil, errTooManyBlocks(len(items))
		}
		blocks := make([]Block, 0, len(items))
		for i, item := range items {
			b, rerr := parseBlock(i, item)
			if rerr != nil {
				return nil, rerr
			}
			blocks = append(blocks, b)
		}
		s.Blocks = blocks
		return items, nil
	}
	return nil, errContentShape()
}

func errContentShape() *refusal.Error {
	return refuse(CodeInvalidContent, keyContent, "content is a string or a list of content blocks.")
}

func errTooManyBlocks(n int) *refusal.Error {
	return refuse(CodeTooManyContentBlocks, keyContent, fmt.Sprintf("content holds %d blocks, more than %d.", n, MaxContentBlocks))
}

// unstorable applies check 11 to a body: its bytes must be UTF-8, and no string in the four
// stored fields may hold U+0000 or an unpaired surrogate escape (the decoder silently turns the
// latter into U+FFFD, so the raw text is what is read). items are the content list's, if any.
func unstorable(members jsonwire.Members, f fields, items []json.RawMessage) *refusal.Error {
	for _, m := range members {
		if !utf8.ValidString(m.Key) || !utf8.Valid(m.Raw) {
			return refuseUnstorable("")
		}
	}
	if raw, ok := f.raw[keyContent]; ok {
		if items != nil {
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

// content applies checks 7 and 8 to the submitted content and answers it as a block list, a
// bare string normalised to one text block. A body's blocks were judged by Decode.
func (s *Submission) content() ([]Block, *refusal.Error) {
	switch {
	case s.Text != nil && s.Blocks != nil:
		return nil, errContentShape()
	case s.Text != nil:
		return []Block{TextBlock(*s.Text)}, nil
	}
	if !s.decoded {
		if len(s.Blocks) > MaxContentBlocks {
			return nil, errTooManyBlocks(len(s.Blocks))
		}
		for i, b := range s.Blocks {
			if rerr := checkBlock(i, b); rerr != nil {
				return nil, rerr
			}
		}
	}
	return s.Blocks, nil
}

// storable applies check 11 to typed values: every string must be UTF-8 without U+0000, and
// every JSON value storable as a body's would be.
func (s *Submission) storable() *refusal.Error {
	if s.Text != nil && !storableText(*s.Text) {
		return refuseUnstorable(keyContent)
	}
	for i, b := range s.Blocks {
		if !b.storable() {
			return refuseUnstorable(fmt.Sprintf("content[%d]", i))
		}
	}
	if s.StructuredContent != nil && !storable(s.StructuredContent) {
		return refuseUnstorable(keyStructuredContent)
	}
	if s.Title != nil && !storableText(*s.Title) {
		return refuseUnstorable(keyTitle)
	}
	if s.Metadata != nil && !storable(s.Metadata) {
		return refuseUnstorable(keyMetadata)
	}
	return nil
}

// storableText reports whether the store keeps s as it is: UTF-8 without U+0000.
func storableText(s string) bool { return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 }
