package announce

import "fmt"

// Kind says whether a tool computes, reads or changes state.
type Kind string

const (
	KindPure     Kind = "pure"      // computes from its input only
	KindReadOnly Kind = "read_only" // reads state, changes nothing
	KindWrite    Kind = "write"     // changes state
)

// EffectScope says whether a tool's effects stay inside this system.
type EffectScope string

const (
	ScopeClosed EffectScope = "closed" // effects stay inside this system's own state
	ScopeOpen   EffectScope = "open"   // effects reach the outside world
)

// Idempotency says what running the same call twice does.
type Idempotency string

const (
	IdempotencyIntrinsic Idempotency = "intrinsic" // twice has the effect of once
	IdempotencyKeyed     Idempotency = "keyed"     // idempotent only with an idempotency key
	IdempotencyNone      Idempotency = "none"      // a repeat may act twice or fail
)

// Reconciliation says whether the host can learn the outcome of an interrupted call.
type Reconciliation string

const (
	ReconciliationNone   Reconciliation = "none"
	ReconciliationLookup Reconciliation = "lookup" // the host can look up whether the effect happened
)

// EffectProfile is trusted host metadata about what a tool does. It drives recovery after an
// expired park and the approval gate, never rides the provider wire, and is not a security
// boundary. Field order is the serialized key order, which the catalog bytes depend on.
//
// A Go value cannot say whether a key was present, so strings left empty read as missing;
// absence of the whole profile is a nil *EffectProfile. Decode untrusted JSON with
// ParseEffectProfile, which names what is missing or wrong; encoding/json's own decoding would
// silently turn a missing destructive into false and drop unknown keys.
//
// A task row freezes a profile that may carry one more key, timeout_ms, after the five. The
// type leaves room for it by embedding: a struct that embeds EffectProfile and adds
// `json:"timeout_ms,omitempty"` serializes the five keys first. The registry never emits it.
type EffectProfile struct {
	Kind           Kind           `json:"kind"`
	Destructive    bool           `json:"destructive"`
	EffectScope    EffectScope    `json:"effect_scope"`
	Idempotency    Idempotency    `json:"idempotency"`
	Reconciliation Reconciliation `json:"reconciliation"`
}

// Effect-profile keys, in serialized order.
const (
	KeyKind           = "kind"
	KeyDestructive    = "destructive"
	KeyEffectScope    = "effect_scope"
	KeyIdempotency    = "idempotency"
	KeyReconciliation = "reconciliation"
)

// ProfileKeys returns the five keys of an effect profile in serialized order. The key set is
// closed: a profile has all five and no other.
func ProfileKeys() []string {
	return []string{KeyKind, KeyDestructive, KeyEffectScope, KeyIdempotency, KeyReconciliation}
}

// Profiles for tool authors, so a plugin need not spell the vocabulary by hand.
var (
	EffectPure            = EffectProfile{Kind: KindPure, EffectScope: ScopeClosed, Idempotency: IdempotencyIntrinsic, Reconciliation: ReconciliationNone}
	EffectReadOnly        = EffectProfile{Kind: KindReadOnly, EffectScope: ScopeClosed, Idempotency: IdempotencyIntrinsic, Reconciliation: ReconciliationNone}
	EffectWriteIdempotent = EffectProfile{Kind: KindWrite, EffectScope: ScopeClosed, Idempotency: IdempotencyIntrinsic, Reconciliation: ReconciliationLookup}
	EffectWrite           = EffectProfile{Kind: KindWrite, EffectScope: ScopeClosed, Idempotency: IdempotencyNone, Reconciliation: ReconciliationLookup}
)

// ProfileProblem names what is wrong with an effect profile.
type ProfileProblem string

const (
	ProblemAbsent          ProfileProblem = "absent"            // no profile at all, or JSON null
	ProblemNotObject       ProfileProblem = "not_object"        // the profile is not a JSON object
	ProblemUnknownKey      ProfileProblem = "unknown_key"       // a key outside the closed set
	ProblemDuplicateKey    ProfileProblem = "duplicate_key"     // a key given twice
	ProblemMissing         ProfileProblem = "missing"           // a required key absent (or empty in a Go value)
	ProblemWrongType       ProfileProblem = "wrong_type"        // a string where a boolean belongs, or the reverse
	ProblemOutOfVocabulary ProfileProblem = "out_of_vocabulary" // a value outside the key's closed vocabulary
	ProblemReadDestructive ProfileProblem = "read_destructive"  // pure or read_only with destructive true
)

// ProfileError reports the first thing wrong with an effect profile.
type ProfileError struct {
	// Key is the offending key, or "" when the profile as a whole is at fault. A caller
	// building a path appends it: "tools[2].effect_profile." + Key.
	Key     string
	Problem ProfileProblem
	// Value is the offending value as written, where there is one.
	Value string
}

func (e *ProfileError) Error() string {
	switch e.Problem {
	case ProblemAbsent:
		return "effect profile is absent"
	case ProblemNotObject:
		return "effect profile is not a JSON object"
	case ProblemUnknownKey:
		return fmt.Sprintf("effect profile: %s is not a key; the keys are kind, destructive, effect_scope, idempotency, reconciliation", e.Key)
	case ProblemDuplicateKey:
		return fmt.Sprintf("effect profile: %s is given more than once", e.Key)
	case ProblemMissing:
		return fmt.Sprintf("effect profile: %s is required", e.Key)
	case ProblemWrongType:
		if e.Key == KeyDestructive {
			return fmt.Sprintf("effect profile: %s must be true or false", e.Key)
		}
		return fmt.Sprintf("effect profile: %s must be a string", e.Key)
	case ProblemOutOfVocabulary:
		return fmt.Sprintf("effect profile: %s %q is not one of %s", e.Key, e.Value, vocabularyText(e.Key))
	case ProblemReadDestructive:
		return fmt.Sprintf("effect profile: a %s tool cannot be destructive", e.Value)
	}
	return fmt.Sprintf("effect profile: %s: %s", e.Key, e.Problem)
}

// vocabulary is the closed value set of each string key.
func vocabulary(key string) []string {
	switch key {
	case KeyKind:
		return []string{string(KindPure), string(KindReadOnly), string(KindWrite)}
	case KeyEffectScope:
		return []string{string(ScopeClosed), string(ScopeOpen)}
	case KeyIdempotency:
		return []string{string(IdempotencyIntrinsic), string(IdempotencyKeyed), string(IdempotencyNone)}
	case KeyReconciliation:
		return []string{string(ReconciliationNone), string(ReconciliationLookup)}
	}
	return nil
}

func vocabularyText(key string) string {
	out := ""
	for i, v := range vocabulary(key) {
		if i > 0 {
			out += ", "
		}
		out += v
	}
	return out
}

func inVocabulary(key, value string) bool {
	for _, v := range vocabulary(key) {
		if v == value {
			return true
		}
	}
	return false
}

// Validate checks the vocabulary and the consistency rule, key by key in serialized order.
// An empty string reads as a missing key. The error is a *ProfileError.
func (p EffectProfile) Validate() error {
	for _, kv := range [...]struct{ key, value string }{
		{KeyKind, string(p.Kind)},
		{KeyEffectScope, string(p.EffectScope)},
		{KeyIdempotency, string(p.Idempotency)},
		{KeyReconciliation, string(p.Reconciliation)},
	} {
		if kv.value == "" {
			return &ProfileError{Key: kv.key, Problem: ProblemMissing}
		}
		if !inVocabulary(kv.key, kv.value) {
			return &ProfileError{Key: kv.key, Problem: ProblemOutOfVocabulary, Value: kv.value}
		}
	}
	return p.checkConsistency()
}

// checkConsistency applies the one cross-key rule: a tool that changes nothing cannot destroy
// anything.
func (p EffectProfile) checkConsistency() error {
	if p.Destructive && (p.Kind == KindPure || p.Kind == KindReadOnly) {
		return &ProfileError{Key: KeyDestructive, Problem: ProblemReadDestructive, Value: string(p.Kind)}
	}
	return nil
}

// Replayable reports whether work under this profile may be retried after its park expires:
// a tool that changes nothing, or whose repeat has the effect of one run. An absent (nil),
// incomplete or out-of-vocabulary profile is not replayable, so doubt settles as uncertain
// rather than as a retry that might act twice.
func Replayable(p *EffectProfile) bool {
	if p == nil || p.Validate() != nil {
		return false
	}
	return p.Kind == KindPure || p.Kind == KindReadOnly || p.Idempotency == IdempotencyIntrinsic
}
