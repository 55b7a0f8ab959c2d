package envelope

import (
	"bytes"
	"encoding/json"
)

type objectMembers []rawMember

// decodeMembers reads one JSON object, keeping every member in input order, repeats included.
func decodeMembers(data []byte) (objectMembers, error) {
	ms, err := splitObject(data)
	return objectMembers(ms), err
}

func (ms objectMembers) get(key string) (json.RawMessage, bool) {
	for _, m := range ms {
		if m.key == key {
			return m.raw, true
		}
	}
	return nil, false
}

// repeated returns the first key given twice, in document order.
func (ms objectMembers) repeated() (string, bool) {
	seen := make(map[string]bool, len(ms))
	for _, m := range ms {
		if seen[m.key] {
			return m.key, true
		}
		seen[m.key] = true
	}
	return "", false
}

// decodeArray splits a JSON array into its elements.
func decodeArray(raw json.RawMessage) ([]json.RawMessage, error) {
	items, err := splitArray(raw)
	if err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, len(items))
	for i, it := range items {
		out[i] = it
	}
	return out, nil
}

// jsonString decodes a JSON string; anything else, null included, is not one.
func jsonString(raw json.RawMessage) (string, bool) { return decodeString(raw) }

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

func firstNonSpace(raw []byte) byte {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c
	}
	return 0
}

// compact removes insignificant whitespace and keeps everything else as sent.
func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	b.Grow(len(raw))
	if err := json.Compact(&b, raw); err != nil {
		return append(json.RawMessage(nil), raw...)
	}
	return json.RawMessage(b.Bytes())
}
