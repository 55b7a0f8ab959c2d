package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/nexuskernel/nexus/core/refusal"
)

// errNotObject is the answer to a non-empty body that is not a JSON object (runs.md §0.3).
var errNotObject = refusal.New(refusal.BadRequest, refusal.CodeParameterInvalid, "The request body must be a JSON object.")

// decodeBody decodes the call's body into dst. An empty body is an absent one: present is false
// and dst is untouched. A body that is not one JSON object is 400 parameter_invalid. Unknown keys
// are kept for dst's own rules: decodeBody does not refuse them.
func decodeBody(c *Call, dst any) (present bool, err error) {
	if len(bytes.TrimSpace(c.Body)) == 0 {
		return false, nil
	}
	if err := checkObject(c.Body); err != nil {
		return true, err
	}
	dec := json.NewDecoder(bytes.NewReader(c.Body))
	dec.UseNumber()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return true, refusal.Newf(refusal.Unprocessable, refusal.CodeValidationFailed, "%s has the wrong type.", te.Field).With("path", te.Field)
		}
		return true, errNotObject
	}
	return true, nil
}

// checkObject reports whether raw is exactly one JSON object with nothing after it.
func checkObject(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return errNotObject
	}
	dec = json.NewDecoder(bytes.NewReader(raw))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return errNotObject
	}
	if _, err := dec.Token(); err != io.EOF {
		return errNotObject
	}
	return nil
}

// requireRoot is the check for a body whose root key is required: absent (or null) is 400
// parameter_missing at that key.
func requireRoot(present bool, root string, isNil bool) error {
	if !present || isNil {
		return refusal.Newf(refusal.BadRequest, refusal.CodeParameterMissing, "The body must carry %q.", root).With("path", root)
	}
	return nil
}
