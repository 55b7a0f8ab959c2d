package jsonwire

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"
)

// UnstorablePath is the JSON path ("$", then ".key" and "[index]" steps, a key written as is) of
// the first value in raw, in document order, that the store cannot keep: a string with U+0000,
// an unpaired surrogate escape or bytes that are not UTF-8, or a number outside the double
// range. It is "" when every value is storable, and also when raw is not one JSON value (that
// is a syntax question, answered before this one).
func UnstorablePath(raw []byte) string {
	f, err := Scan(raw)
	if err != nil || (!f.Unstorable && !f.HugeNumber) {
		return ""
	}
	return unstorableAt("$", raw)
}

// unstorableAt walks a value already known to hold something unstorable, splitting without
// decoding and scanning each leaf.
func unstorableAt(path string, raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '{':
		members, err := SplitObject(raw)
		if err != nil {
			return ""
		}
		for _, m := range members {
			p := path + "." + m.Key
			// A decoded key has lost its escapes: U+0000 stands for itself, and an unpaired
			// surrogate or a byte that is not UTF-8 became U+FFFD.
			if strings.ContainsRune(m.Key, 0) || strings.ContainsRune(m.Key, utf8.RuneError) {
				return p
			}
			if bad := unstorableAt(p, m.Raw); bad != "" {
				return bad
			}
		}
		return ""
	case '[':
		items, err := SplitArray(raw)
		if err != nil {
			return ""
		}
		for i, it := range items {
			if bad := unstorableAt(path+"["+strconv.Itoa(i)+"]", it); bad != "" {
				return bad
			}
		}
		return ""
	}
	if f, err := Scan(raw); err == nil && (f.Unstorable || f.HugeNumber) {
		return path
	}
	return ""
}
