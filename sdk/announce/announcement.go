package announce

import (
	"bytes"
	"encoding/json"
)

// Bounds of an announcement (docs/api.md#the-executor-plane, docs/api.md#limits). Byte bounds on a
// JSON value are measured on its canonical JSON (docs/api.md#conventions), so that two spellings of
// one value meet the same bound.
const (
	// MaxTools bounds the tool list: every entry is checked, stored and offered to imports and
	// pools, and no real runner serves more.
	MaxTools = 512
	// MaxDocuments bounds the document list that a runner's skill tool serves.
	MaxDocuments = 256
	// MaxToolNameLength bounds a served name; model providers and the stored wire name both
	// need a short, fixed-width word.
	MaxToolNameLength = 128
	// MaxDescriptionBytes bounds a tool's model-facing description: it may be imported into
	// a declaration, which is the front of every cached prefix.
	MaxDescriptionBytes = 16 * 1024
	// MaxInputSchemaBytes bounds an input schema (canonical JSON) for the same reason.
	MaxInputSchemaBytes = 64 * 1024
	// MaxEnvironmentBytes bounds the environment facts (canonical JSON), which runners_list
	// hands the model whole.
	MaxEnvironmentBytes = 64 * 1024
	// MaxDocumentNameLength bounds a document name, which a skill catalog line quotes.
	MaxDocumentNameLength = 64
	// MaxDocumentDescriptionBytes bounds a document description, one line of the skills block.
	MaxDocumentDescriptionBytes = 1024
	// MinTimeoutMS and MaxTimeoutMS bound an announced park budget: a positive number of
	// milliseconds, at most seven days, the longest a task may stay parked.
	MinTimeoutMS = 1
	MaxTimeoutMS = 7 * 24 * 60 * 60 * 1000
	// MaxBodyBytes bounds the HTTP announcement body (the default JSON bound
	// (docs/api.md#conventions)): 512 full-size entries do not fit, but real announcements are far
	// smaller.
	MaxBodyBytes = 1 << 20
)

// Announcement is what an executor says it serves: its tools, the facts about where they run,
// and the documents its skill tool serves. The HTTP announcement door and the plugin host build
// the same value and check it with the same function (Validate), so a plugin agrees with a
// runner on every rule.
//
// Field order is the serialized key order of a stored announcement.
type Announcement struct {
	Tools []Tool `json:"tools"`
	// Environment is a JSON object of opaque facts; nil means {}.
	Environment json.RawMessage `json:"environment"`
	Documents   []Document      `json:"documents"`
}

// Tool is one announced tool. Optional fields are pointers or raw JSON so that absence is
// visible: an absent description and an empty one are different refusals.
//
// Field order is the serialized key order of a stored entry, the order an executor read shows.
type Tool struct {
	// Name is the served name, 1..128 characters of [A-Za-z0-9_-], unique in the list.
	Name string `json:"name"`
	// Description is the model-facing text; nil when absent, never empty.
	Description *string `json:"description,omitempty"`
	// InputSchema is a JSON Schema object whose "type" is "object"; nil when absent. It is
	// stored verbatim and never compiled: calls are never validated against it and nothing
	// turns it into a declaration by itself (docs/api.md#the-executor-plane).
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// EffectProfile is required.
	EffectProfile *AnnouncedProfile `json:"effect_profile"`
	// TimeoutMS is the tool's park budget and the ceiling for extends; nil when absent.
	TimeoutMS *int64 `json:"timeout_ms,omitempty"`
}

// ModelFacing reports whether the tool carries both a description and an input schema, the
// two things a Runner import needs to offer it to a model (docs/api.md#the-executor-plane).
func (t Tool) ModelFacing() bool {
	return t.Description != nil && *t.Description != "" && len(t.InputSchema) > 0
}

// AnnouncedProfile is an effect profile as an announcement carries it: words not yet checked,
// and destructive a pointer so that an announcement that leaves it out is refused rather than
// read as false (the plugin protocol sends it as an optional field for the same reason).
// Profile turns it into a checked EffectProfile.
type AnnouncedProfile struct {
	Kind           string `json:"kind"`
	Destructive    *bool  `json:"destructive"`
	EffectScope    string `json:"effect_scope"`
	Idempotency    string `json:"idempotency"`
	Reconciliation string `json:"reconciliation"`
}

// Announced returns p in the shape an announcement carries, for tool authors who hold a
// checked profile (EffectPure, EffectReadOnly, …).
func Announced(p EffectProfile) *AnnouncedProfile {
	d := p.Destructive
	return &AnnouncedProfile{
		Kind:           string(p.Kind),
		Destructive:    &d,
		EffectScope:    string(p.EffectScope),
		Idempotency:    string(p.Idempotency),
		Reconciliation: string(p.Reconciliation),
	}
}

// Profile checks the announced words and returns the profile, or a *ProfileError naming the
// first failure in serialized key order, as ParseEffectProfile does for JSON. An empty word
// reads as a missing key.
func (a AnnouncedProfile) Profile() (EffectProfile, error) {
	var p EffectProfile
	for _, key := range ProfileKeys() {
		if key == KeyDestructive {
			if a.Destructive == nil {
				return EffectProfile{}, &ProfileError{Key: key, Problem: ProblemMissing}
			}
			p.Destructive = *a.Destructive
			continue
		}
		var word string
		switch key {
		case KeyKind:
			word = a.Kind
		case KeyEffectScope:
			word = a.EffectScope
		case KeyIdempotency:
			word = a.Idempotency
		case KeyReconciliation:
			word = a.Reconciliation
		}
		if word == "" {
			return EffectProfile{}, &ProfileError{Key: key, Problem: ProblemMissing}
		}
		if !inVocabulary(key, word) {
			return EffectProfile{}, &ProfileError{Key: key, Problem: ProblemOutOfVocabulary, Value: word}
		}
		switch key {
		case KeyKind:
			p.Kind = Kind(word)
		case KeyEffectScope:
			p.EffectScope = EffectScope(word)
		case KeyIdempotency:
			p.Idempotency = Idempotency(word)
		case KeyReconciliation:
			p.Reconciliation = Reconciliation(word)
		}
	}
	if err := p.checkConsistency(); err != nil {
		return EffectProfile{}, err
	}
	return p, nil
}

// Document is one document a runner's skill tool serves.
type Document struct {
	// Name is lowercase letters and digits in hyphen-separated words, at most 64 characters.
	Name string `json:"name"`
	// Description is non-empty, at most 1,024 bytes.
	Description string `json:"description"`
}

// emptyObject is what an omitted environment stores (docs/api.md#the-executor-plane).
var emptyObject = json.RawMessage(`{}`)

// Normalize returns the announcement as it is stored: an omitted environment becomes {}, an
// omitted tool or document list becomes empty, and raw JSON is compacted (insignificant
// whitespace removed, everything else as sent). It copies; a is unchanged. Normalize a value
// that Validate accepted: raw JSON that does not parse is kept as it was.
func (a Announcement) Normalize() Announcement {
	out := Announcement{
		Tools:       make([]Tool, len(a.Tools)),
		Environment: compactOr(a.Environment, emptyObject),
		Documents:   append(make([]Document, 0, len(a.Documents)), a.Documents...),
	}
	for i, t := range a.Tools {
		c := t
		if t.Description != nil {
			d := *t.Description
			c.Description = &d
		}
		if t.TimeoutMS != nil {
			v := *t.TimeoutMS
			c.TimeoutMS = &v
		}
		if t.EffectProfile != nil {
			p := *t.EffectProfile
			if p.Destructive != nil {
				d := *p.Destructive
				p.Destructive = &d
			}
			c.EffectProfile = &p
		}
		c.InputSchema = compactOr(t.InputSchema, nil)
		out.Tools[i] = c
	}
	return out
}

// compactOr compacts raw, or returns fallback when raw is empty.
func compactOr(raw, fallback json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		if fallback == nil {
			return nil
		}
		return append(json.RawMessage(nil), fallback...)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return append(json.RawMessage(nil), raw...)
	}
	return json.RawMessage(b.Bytes())
}
