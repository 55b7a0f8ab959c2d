package announce

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/sdk/refusal"
)

func ptr[T any](v T) *T { return &v }

func goodTool(name string) Tool {
	return Tool{Name: name, EffectProfile: Announced(EffectReadOnly)}
}

func TestValidateTyped(t *testing.T) {
	t.Parallel()
	tooMany := make([]Tool, MaxTools+1)
	for i := range tooMany {
		tooMany[i] = goodTool("t" + strings.Repeat("x", i%50))
	}
	tests := []struct {
		name string
		a    Announcement
		want []refusal.Problem
	}{
		{"empty", Announcement{}, nil},
		{"full", Announcement{
			Tools: []Tool{{
				Name: "screenshot", Description: ptr("Capture a page."),
				InputSchema:   json.RawMessage(`{"type":"object"}`),
				EffectProfile: Announced(EffectWrite), TimeoutMS: ptr(int64(120000)),
			}},
			Environment: json.RawMessage(`{"os":"linux"}`),
			Documents:   []Document{{Name: "deploy-guide", Description: "How to deploy."}},
		}, nil},
		{"too many tools", Announcement{Tools: tooMany}, []refusal.Problem{{Code: CodeValidationFailed, Path: "tools"}}},
		{"too many documents", Announcement{Documents: make([]Document, MaxDocuments+1)}, []refusal.Problem{{Code: CodeValidationFailed, Path: "documents"}}},
		{"long description", Announcement{Tools: []Tool{{Name: "a", EffectProfile: Announced(EffectPure), Description: ptr(strings.Repeat("d", MaxDescriptionBytes+1))}}},
			[]refusal.Problem{{Code: CodeValidationFailed, Path: "tools[0].description"}}},
		{"large schema", Announcement{Tools: []Tool{{Name: "a", EffectProfile: Announced(EffectPure), InputSchema: json.RawMessage(`{"type":"object","d":"` + strings.Repeat("d", MaxInputSchemaBytes) + `"}`)}}},
			[]refusal.Problem{{Code: CodeValidationFailed, Path: "tools[0].input_schema"}}},
		{"large environment", Announcement{Environment: json.RawMessage(`{"d":"` + strings.Repeat("d", MaxEnvironmentBytes) + `"}`)},
			[]refusal.Problem{{Code: CodeValidationFailed, Path: "environment"}}},
		{"reserved canonical", Announcement{Tools: []Tool{goodTool("nexus.human.ask")}},
			[]refusal.Problem{{Code: CodeReservedNamespace, Path: "tools[0].name", Name: "nexus.human.ask"}}},
		{"no name", Announcement{Tools: []Tool{goodTool("")}}, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].name"}}},
		{"bad name", Announcement{Tools: []Tool{goodTool("a/b")}}, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].name", Name: "a/b"}}},
		{"unprintable name is not echoed", Announcement{Tools: []Tool{goodTool("a\x00")}}, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].name"}}},
		{"duplicate", Announcement{Tools: []Tool{goodTool("a"), goodTool("a")}}, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[1].name", Name: "a"}}},
		{"no profile", Announcement{Tools: []Tool{{Name: "a"}}}, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].effect_profile"}}},
		{"profile without destructive", Announcement{Tools: []Tool{{Name: "a", EffectProfile: &AnnouncedProfile{Kind: "pure", EffectScope: "closed", Idempotency: "intrinsic", Reconciliation: "none"}}}},
			[]refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].effect_profile.destructive"}}},
		{"profile without kind", Announcement{Tools: []Tool{{Name: "a", EffectProfile: &AnnouncedProfile{Destructive: ptr(false), EffectScope: "closed", Idempotency: "intrinsic", Reconciliation: "none"}}}},
			[]refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].effect_profile.kind"}}},
		{"profile idempotency outside", Announcement{Tools: []Tool{{Name: "a", EffectProfile: &AnnouncedProfile{Kind: "write", Destructive: ptr(false), EffectScope: "closed", Idempotency: "twice", Reconciliation: "none"}}}},
			[]refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].effect_profile.idempotency"}}},
		{"pure destructive", Announcement{Tools: []Tool{{Name: "a", EffectProfile: &AnnouncedProfile{Kind: "pure", Destructive: ptr(true), EffectScope: "closed", Idempotency: "intrinsic", Reconciliation: "none"}}}},
			[]refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].effect_profile.destructive"}}},
		{"timeout 0", Announcement{Tools: []Tool{{Name: "a", EffectProfile: Announced(EffectPure), TimeoutMS: ptr(int64(0))}}}, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].timeout_ms"}}},
		{"timeout over", Announcement{Tools: []Tool{{Name: "a", EffectProfile: Announced(EffectPure), TimeoutMS: ptr(int64(MaxTimeoutMS + 1))}}}, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].timeout_ms"}}},
		{"empty description", Announcement{Tools: []Tool{{Name: "a", EffectProfile: Announced(EffectPure), Description: ptr("")}}}, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].description"}}},
		{"description not utf-8", Announcement{Tools: []Tool{{Name: "a", EffectProfile: Announced(EffectPure), Description: ptr("\xff")}}}, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].description"}}},
		{"schema not json", Announcement{Tools: []Tool{{Name: "a", EffectProfile: Announced(EffectPure), InputSchema: json.RawMessage(`{"type":`)}}}, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].input_schema"}}},
		{"schema null", Announcement{Tools: []Tool{{Name: "a", EffectProfile: Announced(EffectPure), InputSchema: json.RawMessage(`null`)}}}, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "tools[0].input_schema"}}},
		{"environment not json", Announcement{Environment: json.RawMessage(`{`)}, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "environment"}}},
		{"environment null", Announcement{Environment: json.RawMessage(`null`)}, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "environment"}}},
		{"environment with invalid utf-8", Announcement{Environment: json.RawMessage("{\"a\":\"\xff\"}")}, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "environment"}}},
		{"document without name", Announcement{Documents: []Document{{Description: "x"}}}, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "documents[0].name"}}},
		{"document with NUL description", Announcement{Documents: []Document{{Name: "a", Description: "\x00"}}}, []refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "documents[0].description"}}},
		{"document duplicate", Announcement{Documents: []Document{{Name: "a", Description: "x"}, {Name: "a", Description: "y"}}},
			[]refusal.Problem{{Code: CodeInvalidAnnouncement, Path: "documents[1]", Name: "a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := Validate(tt.a)
			if diff := cmp.Diff(tt.want, problemsOf(r)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAnnouncedProfileRoundTrip(t *testing.T) {
	t.Parallel()
	for _, p := range []EffectProfile{EffectPure, EffectReadOnly, EffectWrite, EffectWriteIdempotent,
		{Kind: KindWrite, Destructive: true, EffectScope: ScopeOpen, Idempotency: IdempotencyKeyed, Reconciliation: ReconciliationLookup}} {
		got, err := Announced(p).Profile()
		if err != nil {
			t.Errorf("%+v: %v", p, err)
		}
		if got != p {
			t.Errorf("round trip %+v -> %+v", p, got)
		}
		a, _ := json.Marshal(Announced(p))
		b, _ := json.Marshal(p)
		if string(a) != string(b) {
			t.Errorf("announced form %s differs from %s", a, b)
		}
	}
}

func TestNormalizeCopies(t *testing.T) {
	t.Parallel()
	a := Announcement{Tools: []Tool{{
		Name: "a", Description: ptr("d"), TimeoutMS: ptr(int64(5)),
		EffectProfile: Announced(EffectPure), InputSchema: json.RawMessage(" { \"type\" : \"object\" } "),
	}}}
	n := a.Normalize()
	*n.Tools[0].Description = "changed"
	*n.Tools[0].TimeoutMS = 6
	*n.Tools[0].EffectProfile.Destructive = true
	if *a.Tools[0].Description != "d" || *a.Tools[0].TimeoutMS != 5 || *a.Tools[0].EffectProfile.Destructive {
		t.Error("Normalize shares memory with its input")
	}
	if got := string(n.Tools[0].InputSchema); got != `{"type":"object"}` {
		t.Errorf("schema = %s", got)
	}
	if got := string(n.Environment); got != `{}` {
		t.Errorf("environment = %s", got)
	}
	if n.Documents == nil || len(n.Documents) != 0 {
		t.Errorf("documents = %#v", n.Documents)
	}
}

func TestRefusalStatus(t *testing.T) {
	t.Parallel()
	for code, want := range map[string]int{
		CodeReservedNamespace:   422,
		CodeInvalidAnnouncement: 422,
		CodeValidationFailed:    422,
		CodeParameterInvalid:    400,
		CodeParameterMissing:    400,
		CodeContentTooLarge:     413,
	} {
		r := single(code, "", "m")
		if status(r) != want {
			t.Errorf("%s: status %d, want %d", code, status(r), want)
		}
		if r.Error() != code+": m" {
			t.Errorf("Error() = %q", r.Error())
		}
	}
	// The words are contracts.
	words := []string{CodeReservedNamespace, CodeInvalidAnnouncement, CodeValidationFailed, CodeParameterInvalid, CodeParameterMissing, CodeContentTooLarge}
	want := []string{"reserved_namespace", "invalid_announcement", "validation_failed", "parameter_invalid", "parameter_missing", "content_too_large"}
	if diff := cmp.Diff(want, words); diff != "" {
		t.Errorf("words (-want +got):\n%s", diff)
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	// docs/api.md#limits, byte for byte.
	got := []int{MaxTools, MaxDocuments, MaxToolNameLength, MaxDescriptionBytes, MaxInputSchemaBytes,
		MaxEnvironmentBytes, MaxDocumentNameLength, MaxDocumentDescriptionBytes, MinTimeoutMS, MaxTimeoutMS, MaxBodyBytes}
	want := []int{512, 256, 128, 16384, 65536, 65536, 64, 1024, 1, 604800000, 1048576}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
}
