package httpapi

import (
	"math"
	"testing"

	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/executors"
	"github.com/nexuskernel/nexus/core/refusal"
)

// TestDecodeExtend pins the extend body's own rules, in their order: its shape and keys, then
// claim_token (400 parameter_invalid when not a string, parameter_missing when absent, null or
// empty), then timeout_ms (400 parameter_missing, 422 invalid_timeout_ms unless an integer of at
// least 1; beyond int64 it is kept as the largest, for extension_too_long to refuse).
func TestDecodeExtend(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		body, code string
		ms         int64
	}{
		{`{"claim_token":"nxc_a","timeout_ms":60000}`, "", 60000},
		{`{"claim_token":"nxc_a","timeout_ms":1}`, "", 1},
		{`{"claim_token":"nxc_a","timeout_ms":123456789012345678901234567890}`, "", math.MaxInt64},
		{`{"claim_token":"nxc_a","timeout_ms":0}`, executors.CodeInvalidTimeoutMS, 0},
		{`{"claim_token":"nxc_a","timeout_ms":-1}`, executors.CodeInvalidTimeoutMS, 0},
		{`{"claim_token":"nxc_a","timeout_ms":2.5}`, executors.CodeInvalidTimeoutMS, 0},
		{`{"claim_token":"nxc_a","timeout_ms":"5"}`, executors.CodeInvalidTimeoutMS, 0},
		{`{"claim_token":"nxc_a","timeout_ms":true}`, executors.CodeInvalidTimeoutMS, 0},
		{`{"claim_token":"nxc_a","timeout_ms":null}`, executors.CodeInvalidTimeoutMS, 0},
		{`{"claim_token":"nxc_a"}`, refusal.CodeParameterMissing, 0},
		{`{"timeout_ms":5}`, refusal.CodeParameterMissing, 0},
		{`{"claim_token":"","timeout_ms":5}`, refusal.CodeParameterMissing, 0},
		{`{"claim_token":"","timeout_ms":"x"}`, refusal.CodeParameterMissing, 0},
		{`{"claim_token":5,"timeout_ms":5}`, refusal.CodeParameterInvalid, 0},
		{`{"claim_token":"nxc_a","timeout_ms":5,"x":1}`, refusal.CodeParameterInvalid, 0},
		{``, refusal.CodeParameterMissing, 0},
		{`[]`, refusal.CodeParameterInvalid, 0},
		{`{`, refusal.CodeParameterInvalid, 0},
	} {
		tok, ms, err := decodeExtend(&Call{Body: []byte(c.body)})
		if c.code != "" {
			if r, ok := refusal.As(err); !ok || r.Code != c.code {
				t.Fatalf("%s: %v, want %s", c.body, err, c.code)
			}
			continue
		}
		if err != nil || ms != c.ms || tok != "nxc_a" {
			t.Fatalf("%s: %q %d %v", c.body, tok, ms, err)
		}
	}
}

// TestDecodeCommit pins the commit body's own rules (its shape and keys, then claim_token) and
// that the result rides on, undecided, for the envelope to judge at its place.
func TestDecodeCommit(t *testing.T) {
	t.Parallel()
	for body, code := range map[string]string{
		`{"claim_token":"nxc_a"}`: "", `{}`: refusal.CodeParameterMissing, ``: refusal.CodeParameterMissing, `{"claim_token":""}`: refusal.CodeParameterMissing,
		`{"claim_token":null}`: refusal.CodeParameterMissing, `{"claim_token":1}`: refusal.CodeParameterInvalid, `"x"`: refusal.CodeParameterInvalid, `nope`: refusal.CodeParameterInvalid,
		`{"claim_token":"nxc_a","note":1}`: refusal.CodeParameterInvalid, `{"claim_token":"nxc_x","claim_token":"nxc_a"}`: "",
	} {
		tok, res, err := decodeCommit(&Call{Body: []byte(body)})
		if code == "" {
			if err != nil || tok != "nxc_a" || res == nil {
				t.Fatalf("%s: %q %v", body, tok, err)
			}
			continue
		}
		if r, ok := refusal.As(err); !ok || r.Code != code {
			t.Fatalf("%s: %v, want %s", body, err, code)
		}
	}
	// A result the envelope refuses still decodes: its refusal comes after the claim's checks.
	tok, res, err := decodeCommit(&Call{Body: []byte(`{"claim_token":"nxc_a","outcome":"maybe","content":[{"type":"image"}]}`)})
	if err != nil || tok != "nxc_a" {
		t.Fatalf("%q %v", tok, err)
	}
	if _, err := envelope.Validate(res, nil); err == nil {
		t.Fatal("the envelope accepted an unknown outcome")
	} else if r, _ := refusal.As(err); r.Code != envelope.CodeInvalidOutcome {
		t.Fatalf("%v, want invalid_outcome", err)
	}
}
