package identity

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// Plane is which side of the API a token opens.
type Plane int

const (
	// MemberPlane is users and agents: every /agent_api/v1 route outside the executor door.
	MemberPlane Plane = iota + 1
	// ExecutorPlane is runners and tool providers: /agent_api/v1/executor and below.
	ExecutorPlane
)

// Token prefixes tell the planes apart at a glance and in secret scanners.
const (
	MemberTokenPrefix   = "nxm_"
	ExecutorTokenPrefix = "nxe_"
)

// tokenSecretBytes is the randomness of a minted token: 256 bits, beyond any guessing.
const tokenSecretBytes = 32

// minTokenBodyChars is the shortest body (after the prefix) a well-formed token has: 32
// base64url characters, the length both minted tokens (43 characters) and operator-chosen
// bootstrap tokens must reach (docs/api.md#planes-and-tokens).
const minTokenBodyChars = 32

// maxTokenChars bounds what the server hashes from an Authorization header; no real token is
// longer, and the bound keeps a hostile header from costing more than a minted one.
const maxTokenChars = 512

// MintToken returns a fresh token of a plane and the SHA-256 that is stored for it.
func MintToken(p Plane) (secret string, hash []byte) {
	var b [tokenSecretBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("identity: crypto/rand failed: " + err.Error())
	}
	secret = prefixOf(p) + base64.RawURLEncoding.EncodeToString(b[:])
	return secret, HashToken(secret)
}

// HashToken is the stored form of a token.
func HashToken(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

func prefixOf(p Plane) string {
	if p == ExecutorPlane {
		return ExecutorTokenPrefix
	}
	return MemberTokenPrefix
}

// TokenPlane reports the plane of a well-formed token: its prefix followed by at least 32
// characters of the base64url alphabet and nothing else. A malformed token has no plane.
func TokenPlane(secret string) (Plane, bool) {
	if len(secret) > maxTokenChars {
		return 0, false
	}
	var p Plane
	var body string
	switch {
	case strings.HasPrefix(secret, MemberTokenPrefix):
		p, body = MemberPlane, secret[len(MemberTokenPrefix):]
	case strings.HasPrefix(secret, ExecutorTokenPrefix):
		p, body = ExecutorPlane, secret[len(ExecutorTokenPrefix):]
	default:
		return 0, false
	}
	if len(body) < minTokenBodyChars {
		return 0, false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return 0, false
		}
	}
	return p, true
}

// BearerToken extracts the token of an `Authorization: Bearer <token>` header value. The scheme
// is matched case-insensitively (RFC 9110); anything else yields "".
func BearerToken(header string) string {
	const scheme = "bearer "
	if len(header) < len(scheme) || !strings.EqualFold(header[:len(scheme)], scheme) {
		return ""
	}
	return strings.TrimSpace(header[len(scheme):])
}
