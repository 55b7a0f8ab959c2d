package wire

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Body is a request body under construction: compact JSON, HTML escaping off, fields in the
// order the adapter writes them.
type Body struct{ B []byte }

// String appends a JSON string.
func (b *Body) String(s string) { b.B = jsonwire.AppendString(b.B, s) }

// Raw appends bytes that already are JSON.
func (b *Body) Raw(s string) { b.B = append(b.B, s...) }

// Bytes appends JSON bytes.
func (b *Body) Bytes(p []byte) { b.B = append(b.B, p...) }

// Compact appends JSON written elsewhere (a stored schema, a recorded block) compacted, keys in
// their own order; JSON without any whitespace byte is already compact and is appended as it is
// once it proves valid.
func (b *Body) Compact(p []byte) error {
	if !bytes.ContainsAny(p, " \t\r\n") {
		if !json.Valid(p) {
			return errInvalid
		}
		b.B = append(b.B, p...)
		return nil
	}
	buf := bytes.NewBuffer(b.B)
	if err := json.Compact(buf, p); err != nil {
		return err
	}
	b.B = buf.Bytes()
	return nil
}

var errInvalid = errors.New("wire: not JSON")

// Key appends ,"name": (or "name": right after an opening brace).
func (b *Body) Key(name string) {
	if n := len(b.B); n > 0 && b.B[n-1] != '{' && b.B[n-1] != '[' {
		b.B = append(b.B, ',')
	}
	b.B = jsonwire.AppendString(b.B, name)
	b.B = append(b.B, ':')
}

// Sep appends a comma unless the value is the first of its array or object.
func (b *Body) Sep() {
	if n := len(b.B); n > 0 && b.B[n-1] != '{' && b.B[n-1] != '[' {
		b.B = append(b.B, ',')
	}
}
