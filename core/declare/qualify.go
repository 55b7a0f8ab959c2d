package declare

import (
	"crypto/sha256"
	"encoding/hex"
)

// QualifiedName is the callable of an imported Runner tool whose served name collides
// (docs/agent-tools.md#declaring-tools): the first QualifiedPrefixLength characters of the served
// name, "__", and the first QualifiedHashLength hex digits of SHA-256(lowercase Runner id, NUL,
// served name).
func QualifiedName(runnerID, served string) string {
	h := sha256.New()
	h.Write([]byte(lowerID(runnerID)))
	h.Write([]byte{0})
	h.Write([]byte(served))
	sum := hex.EncodeToString(h.Sum(nil))[:QualifiedHashLength]
	prefix := served
	n := 0
	for i := range served {
		if n == QualifiedPrefixLength {
			prefix = served[:i]
			break
		}
		n++
	}
	return prefix + "__" + sum
}
