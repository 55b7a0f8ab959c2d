package runs

import (
	"crypto/sha256"
	"encoding/hex"
)

func sha256Sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
