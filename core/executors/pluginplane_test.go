package executors

import (
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/plugins"
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
	"github.com/nexuskernel/nexus/sdk/toolprovider"
)

// TestSubmissionOf holds a plugin's result to the commit an HTTP runner would send for it: the
// typed submission the plane builds is judged exactly as the body on the right decodes and is
// judged.
func TestSubmissionOf(t *testing.T) {
	t.Parallel()
	title := "echo (2×)"
	text, upload := "a <b>", "6f1b2c3d-0000-4000-8000-00000000aa01"
	cases := []struct {
		name string
		body plugins.CommitBody
		want string
	}{
		{"text", plugins.CommitBody{Outcome: plugins.OutcomeCompleted, Text: "hi", Title: &title, IsError: true},
			`{"claim_token":"nxc_t","content":"hi","is_error":true,"outcome":"completed","title":"echo (2×)"}`},
		{"blank, structured null kept", plugins.CommitBody{Outcome: plugins.OutcomeCompleted, StructuredContent: json.RawMessage(`null`)},
			`{"claim_token":"nxc_t","outcome":"completed","structured_content":null}`},
		{"failed carries its detail as text", plugins.CommitBody{Outcome: plugins.OutcomeFailed, FailureDetail: "plugin x does not serve y"},
			`{"claim_token":"nxc_t","content":"plugin x does not serve y","outcome":"failed"}`},
		{"no outcome is completed", plugins.CommitBody{Metadata: json.RawMessage(`{"a":1}`)},
			`{"claim_token":"nxc_t","metadata":{"a":1},"outcome":"completed"}`},
		{"blocks, a link's zero fields absent", plugins.CommitBody{Blocks: []toolprovider.Block{toolprovider.TextBlock(text),
			toolprovider.LinkBlock(toolprovider.ResourceLink{URI: "nexus://uploads/" + upload, Name: "r.csv", Size: 15, Title: "R"}),
			toolprovider.LinkBlock(toolprovider.ResourceLink{URI: "nexus://uploads/" + upload, Name: "r.csv", MimeType: "text/csv", Description: "d"})}},
			`{"content":[{"type":"text","text":"a <b>"},{"type":"resource_link","uri":"nexus://uploads/` + upload + `","name":"r.csv","size":15,"title":"R"},` +
				`{"type":"resource_link","uri":"nexus://uploads/` + upload + `","name":"r.csv","mimeType":"text/csv","description":"d"}],"outcome":"completed"}`},
		{"a block of no kind is refused as its JSON is", plugins.CommitBody{Blocks: []toolprovider.Block{{}}}, `{"content":[{}]}`},
		{"a nameless link is refused as its JSON is", plugins.CommitBody{Blocks: []toolprovider.Block{
			toolprovider.LinkBlock(toolprovider.ResourceLink{URI: "nexus://uploads/" + upload})}},
			`{"content":[{"type":"resource_link","uri":"nexus://uploads/` + upload + `"}]}`},
	}
	own := func(ids []string) ([]string, error) { return ids, nil }
	for _, c := range cases {
		members, err := jsonwire.SplitObject([]byte(c.want))
		if err != nil {
			t.Fatal(err)
		}
		want, werr := envelope.Validate(envelope.Decode(members), own)
		got, gerr := envelope.Validate(submissionOf(c.body), own)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-body +plugin):\n%s", c.name, diff)
		}
		wr, _ := refusal.As(werr)
		gr, _ := refusal.As(gerr)
		if (werr == nil) != (gerr == nil) || (wr != nil && (gr == nil || wr.Code != gr.Code || wr.Message != gr.Message)) {
			t.Errorf("%s: body %v, plugin %v", c.name, werr, gerr)
		}
	}
}

func TestInboxCursor(t *testing.T) {
	t.Parallel()
	if got := decodeInboxCursor("", 2); len(got) != 2 || got[0] != "" || got[1] != "" {
		t.Fatalf("empty cursor: %q", got)
	}
	if got := decodeInboxCursor("not base64!", 2); len(got) != 2 || got[0] != "" {
		t.Fatalf("a foreign cursor restarts the pages: %q", got)
	}
	raw, _ := json.Marshal([]string{"abc", inboxDone})
	enc := base64URL(raw)
	if got := decodeInboxCursor(enc, 2); got[0] != "abc" || got[1] != inboxDone {
		t.Fatalf("round trip: %q", got)
	}
	if got := decodeInboxCursor(enc, 3); got[0] != "" {
		t.Fatalf("a cursor of another group size restarts: %q", got)
	}
}

// TestClaimOf reads a door's claim answer for the host.
func TestClaimOf(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := claimOf(claimAnswer(`{"kind":"pure"`, "2026-01-02T03:04:35.000Z"), now); err == nil {
		t.Fatal("a malformed effect profile was read")
	}
	if _, err := claimOf(claimAnswer(`null`, "soon"), now); err == nil {
		t.Fatal("a malformed deadline was read")
	}
	c, err := claimOf(claimAnswer(`{"kind":"write","destructive":false,"effect_scope":"closed","idempotency":"none","reconciliation":"lookup","timeout_ms":60000}`,
		"2026-01-02T03:04:35.000Z"), now)
	if err != nil {
		t.Fatal(err)
	}
	if c.Token != "nxc_t" || c.ToolName != "example_control" || c.EffectProfile == nil || c.EffectProfile.Idempotency != announce.IdempotencyNone ||
		!c.DeadlineAt.Equal(now.Add(30*time.Second)) || c.ToolCallID != "call_1" || c.ConversationID != "" {
		t.Fatalf("claim %+v", c)
	}
}

func base64URL(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// claimAnswer is a door's claim answer with this effect profile and deadline.
func claimAnswer(profile, deadline string) *ClaimAnswer {
	call := "call_1"
	return &ClaimAnswer{
		Task: &Row{RunPublicID: "01900000-0000-7000-8000-000000000010", WorkspacePublicID: "01900000-0000-7000-8000-000000000001",
			TaskKey: "r2t0", ToolName: "example_control", ToolInput: json.RawMessage(`{"mode":"sleep"}`), ToolCallID: &call,
			EffectProfile: json.RawMessage(profile)},
		Claim: ClaimDoc{ClaimToken: "nxc_t", Generation: 1, DeadlineAt: deadline},
	}
}
