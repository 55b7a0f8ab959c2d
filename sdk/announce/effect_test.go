package announce

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEffectProfileMarshalOrder(t *testing.T) {
	t.Parallel()
	got, err := json.Marshal(EffectWrite)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"write","destructive":false,"effect_scope":"closed","idempotency":"none","reconciliation":"lookup"}`
	if string(got) != want {
		t.Errorf("Marshal = %s, want %s", got, want)
	}
}

func TestFrozenProfileRoom(t *testing.T) {
	t.Parallel()
	// A frozen row profile embeds EffectProfile and appends timeout_ms after the five keys.
	frozen := struct {
		EffectProfile
		TimeoutMS int64 `json:"timeout_ms,omitempty"`
	}{EffectReadOnly, 120000}
	got, err := json.Marshal(frozen)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"read_only","destructive":false,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none","timeout_ms":120000}`
	if string(got) != want {
		t.Errorf("Marshal = %s, want %s", got, want)
	}
}

func TestParseEffectProfile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want EffectProfile
		err  *ProfileError
	}{
		{
			name: "valid",
			in:   `{"kind":"write","destructive":true,"effect_scope":"open","idempotency":"keyed","reconciliation":"lookup"}`,
			want: EffectProfile{KindWrite, true, ScopeOpen, IdempotencyKeyed, ReconciliationLookup},
		},
		{
			name: "any key order",
			in:   ` {"reconciliation":"none","idempotency":"intrinsic","effect_scope":"closed","destructive":false,"kind":"pure"} `,
			want: EffectPure,
		},
		{name: "empty", in: ``, err: &ProfileError{Problem: ProblemAbsent}},
		{name: "null", in: `null`, err: &ProfileError{Problem: ProblemAbsent}},
		{name: "array", in: `[]`, err: &ProfileError{Problem: ProblemNotObject}},
		{name: "string", in: `"read_only"`, err: &ProfileError{Problem: ProblemNotObject}},
		{name: "truncated", in: `{"kind":"write"`, err: &ProfileError{Problem: ProblemNotObject}},
		{name: "trailing value", in: `{} {}`, err: &ProfileError{Problem: ProblemNotObject}},
		{name: "empty object", in: `{}`, err: &ProfileError{Key: "kind", Problem: ProblemMissing}},
		{
			name: "unknown keys, first in byte order",
			in:   `{"zeta":1,"kind":"write","destructive":false,"effect_scope":"closed","idempotency":"none","reconciliation":"none","timeout_ms":5}`,
			err:  &ProfileError{Key: "timeout_ms", Problem: ProblemUnknownKey},
		},
		{
			name: "duplicate key",
			in:   `{"kind":"write","kind":"write","destructive":false,"effect_scope":"closed","idempotency":"none","reconciliation":"none"}`,
			err:  &ProfileError{Key: "kind", Problem: ProblemDuplicateKey},
		},
		{
			name: "missing reconciliation",
			in:   `{"kind":"write","destructive":false,"effect_scope":"closed","idempotency":"none"}`,
			err:  &ProfileError{Key: "reconciliation", Problem: ProblemMissing},
		},
		{
			name: "missing destructive",
			in:   `{"kind":"read_only","effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"}`,
			err:  &ProfileError{Key: "destructive", Problem: ProblemMissing},
		},
		{
			name: "destructive null",
			in:   `{"kind":"read_only","destructive":null,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"}`,
			err:  &ProfileError{Key: "destructive", Problem: ProblemWrongType, Value: "null"},
		},
		{
			name: "destructive string",
			in:   `{"kind":"read_only","destructive":"false","effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"}`,
			err:  &ProfileError{Key: "destructive", Problem: ProblemWrongType, Value: `"false"`},
		},
		{
			name: "kind not a string",
			in:   `{"kind":1,"destructive":false,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"}`,
			err:  &ProfileError{Key: "kind", Problem: ProblemWrongType, Value: "1"},
		},
		{
			name: "kind null",
			in:   `{"kind":null,"destructive":false,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"}`,
			err:  &ProfileError{Key: "kind", Problem: ProblemWrongType, Value: "null"},
		},
		{
			name: "kind out of vocabulary",
			in:   `{"kind":"Read_Only","destructive":false,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"}`,
			err:  &ProfileError{Key: "kind", Problem: ProblemOutOfVocabulary, Value: "Read_Only"},
		},
		{
			name: "idempotency out of vocabulary",
			in:   `{"kind":"write","destructive":false,"effect_scope":"closed","idempotency":"maybe","reconciliation":"none"}`,
			err:  &ProfileError{Key: "idempotency", Problem: ProblemOutOfVocabulary, Value: "maybe"},
		},
		{
			name: "effect_scope out of vocabulary",
			in:   `{"kind":"write","destructive":false,"effect_scope":"","idempotency":"none","reconciliation":"none"}`,
			err:  &ProfileError{Key: "effect_scope", Problem: ProblemOutOfVocabulary, Value: ""},
		},
		{
			name: "read_only destructive",
			in:   `{"kind":"read_only","destructive":true,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"}`,
			err:  &ProfileError{Key: "destructive", Problem: ProblemReadDestructive, Value: "read_only"},
		},
		{
			name: "pure destructive",
			in:   `{"kind":"pure","destructive":true,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"}`,
			err:  &ProfileError{Key: "destructive", Problem: ProblemReadDestructive, Value: "pure"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseEffectProfile([]byte(tt.in))
			if tt.err == nil {
				if err != nil {
					t.Fatalf("ParseEffectProfile: %v", err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("profile (-want +got):\n%s", diff)
				}
				return
			}
			var pe *ProfileError
			if !errors.As(err, &pe) {
				t.Fatalf("error = %v, want a *ProfileError", err)
			}
			if diff := cmp.Diff(tt.err, pe); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if pe.Error() == "" {
				t.Error("empty error message")
			}
		})
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   EffectProfile
		err  *ProfileError
	}{
		{"pure", EffectPure, nil},
		{"read only", EffectReadOnly, nil},
		{"write idempotent", EffectWriteIdempotent, nil},
		{"write", EffectWrite, nil},
		{"destructive write", EffectProfile{KindWrite, true, ScopeOpen, IdempotencyKeyed, ReconciliationNone}, nil},
		{"zero", EffectProfile{}, &ProfileError{Key: "kind", Problem: ProblemMissing}},
		{"no reconciliation", EffectProfile{Kind: KindWrite, EffectScope: ScopeClosed, Idempotency: IdempotencyNone}, &ProfileError{Key: "reconciliation", Problem: ProblemMissing}},
		{"bad scope", EffectProfile{KindWrite, false, "global", IdempotencyNone, ReconciliationNone}, &ProfileError{Key: "effect_scope", Problem: ProblemOutOfVocabulary, Value: "global"}},
		{"read destructive", EffectProfile{KindReadOnly, true, ScopeClosed, IdempotencyIntrinsic, ReconciliationNone}, &ProfileError{Key: "destructive", Problem: ProblemReadDestructive, Value: "read_only"}},
	}
	for _, tt := range tests {
		err := tt.in.Validate()
		if tt.err == nil {
			if err != nil {
				t.Errorf("%s: Validate = %v", tt.name, err)
			}
			continue
		}
		var pe *ProfileError
		if !errors.As(err, &pe) {
			t.Errorf("%s: Validate = %v, want a *ProfileError", tt.name, err)
			continue
		}
		if diff := cmp.Diff(tt.err, pe); diff != "" {
			t.Errorf("%s: error (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestReplayable(t *testing.T) {
	t.Parallel()
	p := func(e EffectProfile) *EffectProfile { return &e }
	tests := []struct {
		name string
		in   *EffectProfile
		want bool
	}{
		{"absent", nil, false},
		{"zero (incomplete)", p(EffectProfile{}), false},
		{"incomplete read", p(EffectProfile{Kind: KindReadOnly}), false},
		{"out of vocabulary", p(EffectProfile{KindReadOnly, false, ScopeClosed, "always", ReconciliationNone}), false},
		{"inconsistent", p(EffectProfile{KindReadOnly, true, ScopeClosed, IdempotencyIntrinsic, ReconciliationNone}), false},
		{"pure", p(EffectPure), true},
		{"read only, not idempotent", p(EffectProfile{KindReadOnly, false, ScopeOpen, IdempotencyNone, ReconciliationNone}), true},
		{"pure, keyed", p(EffectProfile{KindPure, false, ScopeClosed, IdempotencyKeyed, ReconciliationNone}), true},
		{"write intrinsic", p(EffectWriteIdempotent), true},
		{"write keyed", p(EffectProfile{KindWrite, false, ScopeOpen, IdempotencyKeyed, ReconciliationLookup}), false},
		{"write none", p(EffectWrite), false},
		{"destructive write none", p(EffectProfile{KindWrite, true, ScopeClosed, IdempotencyNone, ReconciliationLookup}), false},
	}
	for _, tt := range tests {
		if got := Replayable(tt.in); got != tt.want {
			t.Errorf("%s: Replayable = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestProfileKeysMatchJSONTags(t *testing.T) {
	t.Parallel()
	// The five keys, as ParseEffectProfile reads them, are the keys Marshal writes, in order.
	b, err := json.Marshal(EffectPure)
	if err != nil {
		t.Fatal(err)
	}
	members, err := decodeMembers(b)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, m := range members {
		keys = append(keys, m.Key)
	}
	if diff := cmp.Diff([]string{"kind", "destructive", "effect_scope", "idempotency", "reconciliation"}, keys); diff != "" {
		t.Errorf("marshalled keys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(keys, ProfileKeys()); diff != "" {
		t.Errorf("ProfileKeys (-marshal +ProfileKeys):\n%s", diff)
	}
}
