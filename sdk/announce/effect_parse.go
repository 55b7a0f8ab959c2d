package announce

import (
	"bytes"
	"encoding/json"
	"errors"
	"sort"

	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// ParseEffectProfile decodes an effect profile from JSON strictly: an object with exactly the
// five keys, each once, of the right type, in the vocabulary, and consistent. Key order in the
// input is free. The error is a *ProfileError naming the first failure: the object's shape
// first (unknown keys, the first in byte order, then repeated keys), then each key in
// serialized order (presence, type, vocabulary), then the consistency rule. Empty input and
// JSON null are ProblemAbsent.
func ParseEffectProfile(data []byte) (EffectProfile, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return EffectProfile{}, &ProfileError{Problem: ProblemAbsent}
	}
	members, err := decodeMembers(trimmed)
	if err != nil {
		return EffectProfile{}, &ProfileError{Problem: ProblemNotObject}
	}
	if err := checkShape(members); err != nil {
		return EffectProfile{}, err
	}

	var p EffectProfile
	for _, key := range ProfileKeys() {
		raw, ok := members.Get(key)
		if !ok {
			return EffectProfile{}, &ProfileError{Key: key, Problem: ProblemMissing}
		}
		if key == KeyDestructive {
			if err := json.Unmarshal(raw, &p.Destructive); err != nil || bytes.Equal(raw, []byte("null")) {
				return EffectProfile{}, &ProfileError{Key: key, Problem: ProblemWrongType, Value: string(raw)}
			}
			continue
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || raw[0] != '"' {
			return EffectProfile{}, &ProfileError{Key: key, Problem: ProblemWrongType, Value: string(raw)}
		}
		if !inVocabulary(key, s) {
			return EffectProfile{}, &ProfileError{Key: key, Problem: ProblemOutOfVocabulary, Value: s}
		}
		switch key {
		case KeyKind:
			p.Kind = Kind(s)
		case KeyEffectScope:
			p.EffectScope = EffectScope(s)
		case KeyIdempotency:
			p.Idempotency = Idempotency(s)
		case KeyReconciliation:
			p.Reconciliation = Reconciliation(s)
		}
	}
	if err := p.checkConsistency(); err != nil {
		return EffectProfile{}, err
	}
	return p, nil
}

// checkShape refuses keys outside the closed set and keys given twice.
func checkShape(members objectMembers) error {
	var unknown []string
	for _, m := range members {
		if !isProfileKey(m.Key) {
			unknown = append(unknown, m.Key)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return &ProfileError{Key: unknown[0], Problem: ProblemUnknownKey}
	}
	seen := make(map[string]bool, len(members))
	for _, m := range members {
		if seen[m.Key] {
			return &ProfileError{Key: m.Key, Problem: ProblemDuplicateKey}
		}
		seen[m.Key] = true
	}
	return nil
}

func isProfileKey(key string) bool {
	for _, k := range ProfileKeys() {
		if k == key {
			return true
		}
	}
	return false
}

// objectMembers are an object's members as written, repeats included.
type objectMembers = jsonwire.Members

var errNotObject = errors.New("not a JSON object")

// decodeMembers reads one JSON object, keeping every member in input order, repeats included,
// which a map would hide.
func decodeMembers(data []byte) (objectMembers, error) {
	ms, err := jsonwire.SplitObject(data)
	if err != nil {
		return nil, errNotObject
	}
	return ms, nil
}
