package envelope

import (
	"bytes"
	"encoding/json"
)

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
