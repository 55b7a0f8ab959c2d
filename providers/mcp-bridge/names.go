package mcpbridge

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// hashDigits is how many hex digits of SHA-256 the hashed form of a long name carries.
const hashDigits = 10

// Encode maps an MCP tool name to the announcement grammar (docs/plugins.md#served-names): bytes
// of [A-Za-z0-9-] are kept, "_" is kept unless it begins "__" followed by two lowercase hex
// digits (then it is written "__5f"), and every other byte b is written "__" and b in two
// lowercase hex digits. Decode(Encode(n)) == n for every string.
func Encode(n string) string {
	var b strings.Builder
	b.Grow(len(n))
	for i := 0; i < len(n); i++ {
		c := n[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-':
			b.WriteByte(c)
		case c == '_' && !isEscapeAt(n, i):
			b.WriteByte(c)
		default:
			b.WriteString("__")
			b.WriteByte(hexDigit(c >> 4))
			b.WriteByte(hexDigit(c & 0xf))
		}
	}
	return b.String()
}

// Decode inverts Encode: "__" followed by two lowercase hex digits is one byte with that value,
// any other character is itself.
func Decode(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if isEscapeAt(s, i) {
			b.WriteByte(hexValue(s[i+2])<<4 | hexValue(s[i+3]))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// isEscapeAt reports whether s holds "__hh" (h a lowercase hex digit) at i.
func isEscapeAt(s string, i int) bool {
	return i+3 < len(s) && s[i] == '_' && s[i+1] == '_' && isLowerHex(s[i+2]) && isLowerHex(s[i+3])
}

func isLowerHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

func hexDigit(v byte) byte { return "0123456789abcdef"[v] }

func hexValue(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}

// servedName is the name a tool is announced under: prefix + Encode(n) when that fits in
// maxChars, else the hashed form prefix + head + "-" + 10 hex digits of SHA-256(n), head being
// the longest start of Encode(n) that fits and does not end inside a "__hh" escape. The
// configuration guarantees len(prefix) <= maxChars-12.
func servedName(prefix, n string, maxChars int) string {
	enc := Encode(n)
	if len(prefix)+len(enc) <= maxChars {
		return prefix + enc
	}
	sum := sha256.Sum256([]byte(n))
	h := hex.EncodeToString(sum[:])[:hashDigits]
	room := maxChars - len(prefix) - 1 - hashDigits
	return prefix + escapeSafeHead(enc, room) + "-" + h
}

// escapeSafeHead cuts enc to at most room bytes without ending inside an escape written by
// Encode. Escapes are found by scanning from the start, since "__" may also occur as literal
// text (an "_" kept as itself before another).
func escapeSafeHead(enc string, room int) string {
	if room >= len(enc) {
		return enc
	}
	cut := 0
	for i := 0; i < len(enc); {
		step := 1
		if isEscapeAt(enc, i) {
			step = 4
		}
		if i+step > room {
			break
		}
		i += step
		cut = i
	}
	return enc[:cut]
}
