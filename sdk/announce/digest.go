package announce

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// DigestPrefix starts every definition digest: the hash function, so that a later change of it
// reads as a changed definition rather than as a collision.
const DigestPrefix = "sha256:"

// DefinitionDigest is what a pinned import records of an announced tool
// (docs/agent-tools.md#pinned-imports): DigestPrefix and the hex SHA-256 of the canonical JSON of
// {name, description, input_schema, effect_profile}. Two spellings of one definition have one
// digest; any change of the name, the model-facing text, the schema or the effect profile
// changes it. timeout_ms is not part of it: a park budget tells the model nothing.
func DefinitionDigest(t Tool) string {
	b := []byte(`{"name":`)
	b = jsonwire.AppendString(b, t.Name)
	b = append(b, `,"description":`...)
	if t.Description != nil {
		b = jsonwire.AppendString(b, *t.Description)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"input_schema":`...)
	if len(t.InputSchema) > 0 {
		b = append(b, t.InputSchema...)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"effect_profile":`...)
	if p, err := json.Marshal(t.EffectProfile); err == nil {
		b = append(b, p...)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, '}')
	if c, err := jsonwire.CanonicalValue(b); err == nil {
		b = c
	}
	sum := sha256.Sum256(b)
	return DigestPrefix + hex.EncodeToString(sum[:])
}

// IsDefinitionDigest reports whether s has the form DefinitionDigest writes.
func IsDefinitionDigest(s string) bool {
	h, ok := strings.CutPrefix(s, DigestPrefix)
	if !ok || len(h) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(h); i++ {
		if !('0' <= h[i] && h[i] <= '9' || 'a' <= h[i] && h[i] <= 'f') {
			return false
		}
	}
	return true
}
