package identity

import (
	"strings"
	"testing"
)

func TestMintedTokenShape(t *testing.T) {
	t.Parallel()
	for _, p := range []Plane{MemberPlane, ExecutorPlane} {
		s, h := MintToken(p)
		if got, ok := TokenPlane(s); !ok || got != p {
			t.Errorf("TokenPlane(%q) = %v, %v; want %v", s, got, ok, p)
		}
		if len(s) != 4+43 {
			t.Errorf("minted token %q has %d characters, want 47", s, len(s))
		}
		if string(h) != string(HashToken(s)) || len(h) != 32 {
			t.Errorf("hash of minted token is not its SHA-256")
		}
		s2, _ := MintToken(p)
		if s == s2 {
			t.Error("two minted tokens are equal")
		}
	}
}

func TestTokenPlane(t *testing.T) {
	t.Parallel()
	body32 := strings.Repeat("aZ9-_", 6) + "ab" // 32 characters
	cases := []struct {
		in    string
		plane Plane
		ok    bool
	}{
		{"nxm_" + body32, MemberPlane, true},
		{"nxe_" + body32, ExecutorPlane, true},
		{"nxm_" + body32 + "xyz", MemberPlane, true},
		{"nxm_" + body32[:31], 0, false},       // too short
		{"nxm_" + body32[:31] + "=", 0, false}, // padding is not base64url
		{"nxm_" + body32 + "+", 0, false},      // standard base64 character
		{"nxm_" + body32 + " ", 0, false},
		{"NXM_" + body32, 0, false},
		{"nxx_" + body32, 0, false},
		{body32, 0, false},
		{"", 0, false},
		{"nxm_" + strings.Repeat("a", maxTokenChars), 0, false}, // over the bound
	}
	for _, c := range cases {
		p, ok := TokenPlane(c.in)
		if ok != c.ok || p != c.plane {
			t.Errorf("TokenPlane(%q) = %v, %v; want %v, %v", c.in, p, ok, c.plane, c.ok)
		}
	}
}

func TestBearerToken(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"Bearer abc":   "abc",
		"bearer abc":   "abc",
		"BEARER  abc ": "abc",
		"Basic abc":    "",
		"Bearer":       "",
		"":             "",
		"Bearerabc":    "",
	}
	for in, want := range cases {
		if got := BearerToken(in); got != want {
			t.Errorf("BearerToken(%q) = %q, want %q", in, got, want)
		}
	}
}
