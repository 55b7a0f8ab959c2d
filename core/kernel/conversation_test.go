package kernel_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/kernel"
	"github.com/nexuskernel/nexus/core/runs"
)

// TestConversationTexts pins the conversation tools' result texts and titles byte for byte
// (docs/agent-tools.md#delegation-and-conversations); the engine tests pin the refusal sentences.
func TestConversationTexts(t *testing.T) {
	t.Parallel()
	const conv, run = "0190a5e2-0000-7000-8000-0000000000c1", "0190a5e2-0000-7000-8000-000000000001"
	at := int64(1764496800000) // 2025-11-30T10:00:00Z
	cases := []struct{ name, got, want string }{
		{"spawn receipt", kernel.SpawnReceipt(conv, "login-tests", "@helper", "r3t1", run),
			"Spawned conversation 0190a5e2-0000-7000-8000-0000000000c1 (label \"login-tests\"), answered by @helper, in the background. Its reply will reach you later as a <task_result task=\"r3t1\" conversation=\"0190a5e2-0000-7000-8000-0000000000c1\"> message, which is not from the person.\nTask reference: run_public_id=\"0190a5e2-0000-7000-8000-000000000001\", task=\"r3t1\""},
		{"spawn receipt without a label", kernel.SpawnReceipt(conv, "", "@helper", "r3t1", run),
			"Spawned conversation 0190a5e2-0000-7000-8000-0000000000c1, answered by @helper, in the background. Its reply will reach you later as a <task_result task=\"r3t1\" conversation=\"0190a5e2-0000-7000-8000-0000000000c1\"> message, which is not from the person.\nTask reference: run_public_id=\"0190a5e2-0000-7000-8000-000000000001\", task=\"r3t1\""},
		{"waited spawn, still working", kernel.SpawnStillWorkingText(conv, "login-tests", "@helper"),
			"Spawned conversation 0190a5e2-0000-7000-8000-0000000000c1 (label \"login-tests\"), answered by @helper.\n(the conversation is still working; its reply will reach you later in a message that is not from the person)"},
		{"spawn title", kernel.SpawnTitle(conv, "login-tests"), "spawned login-tests"},
		{"spawn title without a label", kernel.SpawnTitle(conv, ""), "spawned " + conv},
		{"queued", kernel.SendReceipt(conv, "", conversations.DeliveryQueued, nil), "Sent to " + conv + " (queued)."},
		{"steering", kernel.SendReceipt(conv, "", conversations.DeliverySteering, nil), "Sent to " + conv + " (steering)."},
		{"scheduled", kernel.SendReceipt(conv, "", conversations.DeliveryScheduled, &at), "Sent to " + conv + " (scheduled for 2025-11-30T10:00:00Z)."},
		{"for an agent", kernel.SendReceipt(conv, "@scout", conversations.DeliveryQueued, nil), "Sent to " + conv + ", for @scout (queued)."},
		{"send title", kernel.SendTitle("research"), "sent to research"},
		{"status", kernel.StatusText(&conversations.ConversationState{PublicID: conv, Running: true, Queued: 2, AnsweredBy: "@helper", WaitingForYou: 1}),
			"Conversation " + conv + ": running; queue: 2 waiting; answered by @helper.\n1 message from it waits for you, delivered when you end your turn."},
		{"status, plural", kernel.StatusText(&conversations.ConversationState{PublicID: conv, Queued: 0, AnsweredBy: "@helper", WaitingForYou: 3}),
			"Conversation " + conv + ": idle; queue: 0 waiting; answered by @helper.\n3 messages from it wait for you, delivered when you end your turn."},
		{"status title", kernel.StatusTitle("research"), "status of research"},
		{"canceled", kernel.CancelText(conv, true), "Canceled the work this run started in conversation " + conv + "."},
		{"nothing to cancel", kernel.CancelText(conv, false), "Nothing to cancel: this run has no unfinished work in conversation " + conv + "."},
		{"cancel title", kernel.CancelTitle("research"), "canceled work in research"},
		{"no conversation", kernel.NoConversationDetail("spawn"), "spawn needs a conversation; this run has none."},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, c.got, c.want)
		}
	}
}

// TestConversationDispatch: the family dispatches its four canonical names; without the engine's
// transaction a call is an error, never a made-up result.
func TestConversationDispatch(t *testing.T) {
	t.Parallel()
	tools := kernel.New(kernel.Options{Conversation: &kernel.Conversation{}})
	for _, c := range []string{kernel.CanonicalSpawn, kernel.CanonicalSend, kernel.CanonicalStatus, kernel.CanonicalCancel} {
		out, err := tools.Run(context.Background(), &runs.KernelCall{Canonical: c, Input: json.RawMessage(`{}`)})
		if err == nil || out != nil {
			t.Errorf("%s without an engine: %+v %v", c, out, err)
		}
	}
	if n := len(tools.Canonicals()); n != 4 {
		t.Fatalf("%d canonicals", n)
	}
}
