package conversations_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// convKernelTools are the kernel tools the conversation tests' agents declare.
const convKernelTools = `["nexus.graph.wait","nexus.conversation.spawn","nexus.conversation.send","nexus.conversation.status","nexus.conversation.cancel","nexus.graph.delegate_task","nexus.human.ask"]`

// convProfile is an agent profile that declares the conversation tools.
const convProfile = `{"kernel_tools":` + convKernelTools + `,"approval_mode":"bypass","approval_rules":[]}`

// convHarness is a conversation answered by @bot whose profile declares the conversation tools,
// and a second agent @scout.
func convHarness(t *testing.T, s *store.Store) (*harness, string) {
	t.Helper()
	h, conv := conversationHarness(t, s, convProfile)
	h.NewAgent("scout", "Scout")
	return h, conv
}

// childOf reads the child conversation of conv with this label.
func childOf(h *harness, conv, label string) *conversations.ConversationDoc {
	h.T.Helper()
	page, err := h.Conv.ListConversations(h.Ctx, h.Actor, "", "", 100)
	if err != nil {
		h.T.Fatal(err)
	}
	for _, c := range page.Conversations {
		if c.ParentConversationPublicID != nil && *c.ParentConversationPublicID == conv && deref(c.Label) == label {
			return c
		}
	}
	h.T.Fatalf("no child %q of %s", label, conv)
	return nil
}

func agentID(h *harness, handle string) string {
	h.T.Helper()
	var id string
	if err := h.S.Reader().Get(h.Ctx, &id, `SELECT public_id FROM agents WHERE handle = ?`, handle); err != nil {
		h.T.Fatal(err)
	}
	return id
}

// childBrief is a spawned child's brief: its own one-round script.
const childBrief = "Find it.\n!mock\nround 1\nsay found it"

// replyEnvelope is a child's completed reply as its parent reads it.
func replyEnvelope(key, child, prompt, body string) string {
	return "<task_result task=\"" + key + "\" status=\"completed\" conversation=\"" + child + "\">\n<prompt>" + prompt + "</prompt>\n" + body + "\n</task_result>"
}

// TestSpawnDetached: a detached spawn opens a labeled child conversation answered by a fresh copy
// of the caller's agent, posts the brief as its first input (authored by the agent, with the sender
// conversation), answers with the receipt, title and structured_content of
// docs/agent-tools.md#delegation-and-conversations, and the child's reply comes back once as a
// kernel-authored turn on the parent conversation.
func TestSpawnDetached(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h, conv := convHarness(t, s)
		msg := script("Spawn.",
			[]string{call("spawn", map[string]any{"prompt": childBrief, "label": "Research"})},
			[]string{"say spawned"},
			[]string{"say mail read: {{last_result}}"})
		first := h.Post(conv, msg, "")
		h.Drain()
		child := childOf(h, conv, "research")
		bot := agentID(h, "bot")
		if child.AnsweringAgentPublicID != bot || child.CreatedBy.Kind != "agent" || child.CreatedBy.PublicID != bot {
			t.Fatalf("child %+v", child)
		}
		rid := first.Run.PublicID
		receipt := "Spawned conversation " + child.PublicID + " (label \"research\"), answered by @bot, in the background. Its reply will reach you later as a <task_result task=\"r2t0\" conversation=\"" +
			child.PublicID + "\"> message, which is not from the person.\nTask reference: run_public_id=\"" + rid + "\", task=\"r2t0\""
		c := h.Task(rid, "r2t0")
		if c.Status != runs.StatusCompleted || deref(c.Output) != receipt {
			t.Fatalf("receipt %s %q\nwant %q", c.Status, deref(c.Output), receipt)
		}
		if deref(c.Title) != "spawned research" {
			t.Fatalf("title %q", deref(c.Title))
		}
		wantSC := `{"conversation_public_id":"` + child.PublicID + `","label":"research","answered_by":"@bot","run_public_id":"` + rid + `","task":"r2t0","wait":false}`
		if c.StructuredContent == nil || string(*c.StructuredContent) != wantSC {
			t.Fatalf("structured_content %v\nwant %s", c.StructuredContent, wantSC)
		}
		ct := h.Turns(child.PublicID)
		if len(ct) != 1 || ct[0].Author.Kind != "agent" || ct[0].Author.PublicID != bot || deref(ct[0].SenderConversationPublicID) != conv ||
			ct[0].Input.Text != childBrief || ct[0].Status != runs.TurnCompleted || ct[0].Answer.Text != "found it" {
			t.Fatalf("child turns %+v", ct)
		}
		pt := h.Turns(conv)
		env := replyEnvelope("r2t0", child.PublicID, childBrief, "found it")
		if len(pt) != 2 || pt[1].Author.Kind != "kernel" || pt[1].Input.Text != env {
			t.Fatalf("parent turns %d %+v", len(pt), pt[len(pt)-1])
		}
		if pt[1].Answer == nil || pt[1].Answer.Text != "mail read: "+env {
			t.Fatalf("kernel turn answer %+v", pt[1].Answer)
		}
		if r := h.Run(rid); r.Status != runs.RunCompleted {
			t.Fatalf("originating run %s", r.Status)
		}
	})
}

// wantOutputs checks the output text of each of a run's tasks by key.
func wantOutputs(h *harness, run string, want map[string]string) {
	h.T.Helper()
	for key, text := range want {
		got := h.Task(run, key)
		if deref(got.Output) != text {
			h.T.Errorf("%s output %q\nwant %q", key, deref(got.Output), text)
		}
	}
}

// TestConversationToolRefusals: every argument and addressing refusal of spawn, send, status and
// cancel is an error result with the exact text of
// docs/agent-tools.md#delegation-and-conversations, and changes nothing.
func TestConversationToolRefusals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h, conv := convHarness(t, s)
		runner := "0190a5e2-0000-7000-8000-0000000000c1"
		calls := []string{
			call("spawn", map[string]any{"prompt": childBrief, "label": "dup"}),
			call("spawn", map[string]any{"prompt": childBrief, "label": "DUP"}),
			call("spawn", map[string]any{"prompt": "x", "label": "Bad Label"}),
			call("spawn", map[string]any{"prompt": "x", "agent": "@nobody"}),
			call("spawn", map[string]any{"prompt": "x", "agent": "@ana"}),
			call("spawn", map[string]any{"prompt": "x", "default_runner_executor_public_id": runner}),
			call("spawn", map[string]any{"prompt": "x", "model": "acme/huge"}),
			call("spawn", map[string]any{"prompt": " "}),
			call("spawn", map[string]any{"question": "x"}),
			call("status", map[string]any{"to": "nope"}),
			call("send", map[string]any{"to": "nope", "message": "hi"}),
			call("send", map[string]any{"to": "dup", "message": "hi", "deliver_in": "5x"}),
			call("send", map[string]any{"to": "dup", "message": "hi", "deliver_at": "2030-01-15T10:00:00"}),
			call("send", map[string]any{"to": "dup", "message": "hi", "deliver_in": "5m", "deliver_at": "2030-01-15T10:00:00Z"}),
			call("send", map[string]any{"to": "dup", "message": "hi", "steer": true, "deliver_in": "5m"}),
			call("send", map[string]any{"to": conv, "message": "hi", "deliver_at": "2020-01-01T00:00:00Z"}),
			call("send", map[string]any{"to": conv, "message": "hi", "deliver_in": "31d"}),
			call("send", map[string]any{"to": "dup", "message": "hi", "agent": "@nobody"}),
			call("send", map[string]any{"to": "dup", "message": "hi", "agent": "@ana"}),
			call("send", map[string]any{"to": "dup", "message": "hi", "model": "acme/huge"}),
			call("cancel", map[string]any{"to": "nope"}),
			call("cancel", map[string]any{}),
			call("status", map[string]any{"to": "x", "extra": 1}),
			call("send", map[string]any{"to": "dup", "message": ""}),
		}
		first := h.Post(conv, script("Refusals.", calls, []string{"say done"}), "")
		h.Drain()
		rid := first.Run.PublicID
		dup := childOf(h, conv, "dup")
		wantOutputs(h, rid, map[string]string{
			"r2t1":  `label_taken: label "dup" is already used by conversation ` + dup.PublicID + `.`,
			"r2t2":  "invalid_arguments: label must be 1 to 64 lowercase letters, digits, _ or -, starting with a letter or digit.",
			"r2t3":  `principal_unknown: agent "@nobody" names no agent of this workspace. The agents are: @bot, @scout.`,
			"r2t4":  `answerer_not_eligible: agent "@ana" cannot answer a conversation here: it is not an agent with write standing in this workspace.`,
			"r2t5":  "runner_not_eligible: Runner " + runner + " is not available to the answering agent.",
			"r2t6":  `model_not_authorized: model "acme/huge" is not a model you may run here (unknown_model).`,
			"r2t7":  "invalid_arguments: prompt is empty.",
			"r2t8":  "invalid_arguments: question is not a parameter; the parameters are prompt, agent, label, lifetime, wake, wait, default_runner_executor_public_id, model.",
			"r2t9":  `unknown_conversation: no conversation "nope" that you can read.`,
			"r2t10": `unknown_conversation: no conversation "nope" that you can read.`,
			"r2t11": "invalid_arguments: deliver_in must be a whole number followed by s, m, h or d, such as 90s.",
			"r2t12": "invalid_arguments: deliver_at must be an ISO 8601 time with a UTC offset.",
			"r2t13": "invalid_arguments: use at most one of deliver_in and deliver_at.",
			"r2t14": "invalid_arguments: deliver_in and deliver_at cannot be used with steer.",
			"r2t15": "schedule_out_of_range: the delivery time must be in the future and at most 30 days ahead.",
			"r2t16": "schedule_out_of_range: the delivery time must be in the future and at most 30 days ahead.",
			"r2t17": `principal_unknown: agent "@nobody" names no agent of this workspace. The agents are: @bot, @scout.`,
			"r2t18": `answerer_not_eligible: agent "@ana" cannot answer in ` + dup.PublicID + `: it is not an agent with write standing there.`,
			"r2t19": `model_not_authorized: model "acme/huge" is not a model you may run here (unknown_model).`,
			"r2t20": `unknown_conversation: no conversation "nope" that you can read.`,
			"r2t21": "invalid_arguments: to is required.",
			"r2t22": "invalid_arguments: extra is not a parameter; the parameters are to.",
			"r2t23": "invalid_arguments: message is empty.",
		})
		for key, title := range map[string]string{"r2t1": "spawn refused", "r2t9": "status refused", "r2t10": "send refused", "r2t20": "cancel refused"} {
			got := h.Task(rid, key)
			if deref(got.Title) != title || got.IsError == nil || !*got.IsError {
				t.Errorf("%s title %q is_error %v", key, deref(got.Title), got.IsError)
			}
		}
		sc := h.Task(rid, "r2t9").StructuredContent
		if want := `{"error":{"key":"unknown_conversation","detail":"no conversation \"nope\" that you can read."}}`; sc == nil || string(*sc) != want {
			t.Errorf("structured_content %v, want %s", sc, want)
		}
		// Only the first spawn made a conversation: refusals change nothing.
		page, err := h.Conv.ListConversations(h.Ctx, h.Actor, "", "", 100)
		if err != nil || len(page.Conversations) != 2 {
			t.Fatalf("%d conversations, want the parent and one child (%v)", len(page.Conversations), err)
		}

		// A standalone run has no conversation.
		kt := `"kernel_tools":` + convKernelTools
		for _, tool := range []string{"spawn", "send", "status", "cancel"} {
			c := h.Create(modelStep(script("Alone.", []string{call(tool, map[string]any{"to": conv, "prompt": "x", "message": "x"})}, []string{"say done"}), kt))
			h.Drain()
			wantOutputs(h, c.Run.PublicID, map[string]string{"r2t0": "no_conversation: " + tool + " needs a conversation; this run has none."})
		}
	})
}

// TestAddressingTree: a child may read its ancestors with status but may neither send to nor
// cancel in them (ancestor_conversation), and while its parent waits on it a send upward is
// parent_waiting; a conversation the agent neither answers nor created is readable but not
// writable (not_authorized).
func TestAddressingTree(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h, conv := convHarness(t, s)
		other, err := h.Conv.CreateConversation(h.Ctx, h.Actor, conversationBody(`{"answering_agent_public_id":"`+agentID(h, "scout")+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		brief := "Child.\n!mock\nround 1\n" + strings.Join([]string{
			call("send", map[string]any{"to": conv, "message": "up"}),
			call("cancel", map[string]any{"to": conv}),
			call("status", map[string]any{"to": conv}),
			call("send", map[string]any{"to": other.PublicID, "message": "hi"}),
			call("cancel", map[string]any{"to": other.PublicID}),
		}, "\n") + "\nround 2\nsay child done"
		first := h.Post(conv, script("Tree.", []string{call("spawn", map[string]any{"prompt": brief, "label": "kid", "wait": true})},
			[]string{"say parent done"}), "")
		h.Drain()
		kid := childOf(h, conv, "kid")
		kt := h.Turns(kid.PublicID)
		if len(kt) != 1 || kt[0].Status != runs.TurnCompleted {
			t.Fatalf("child turns %+v", kt)
		}
		wantOutputs(h, kt[0].RunPublicID, map[string]string{
			"r2t0": "parent_waiting: your parent is waiting for your reply; end your turn with the answer instead of sending.",
			"r2t1": "ancestor_conversation: " + conv + " is above you in the conversation tree; finish your reply to answer it.",
			"r2t2": "Conversation " + conv + ": running; queue: 0 waiting; answered by @bot.",
			"r2t3": "not_authorized: you may read " + other.PublicID + " but not write in it.",
			"r2t4": "not_authorized: you may read " + other.PublicID + " but not write in it.",
		})
		if r := h.Run(first.Run.PublicID); r.Status != runs.RunCompleted || deref(r.Answer) != "parent done" {
			t.Fatalf("parent run %s %q", r.Status, deref(r.Answer))
		}
	})
}

// TestMessagingPolicy: a private agent accepts new spawns and sends only from itself; its own
// fresh copies are allowed, and other agents stay public.
func TestMessagingPolicy(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h, conv := convHarness(t, s)
		scout := agentID(h, "scout")
		bot := agentID(h, "bot")
		if err := s.Write(h.Ctx, func(tx *store.Tx) error {
			return store.PutAgentMessagingPolicy(h.Ctx, tx, h.Actor.WorkspaceID, `{"`+scout+`":"private","`+bot+`":"private"}`, 1)
		}); err != nil {
			t.Fatal(err)
		}
		first := h.Post(conv, script("Policy.", []string{
			call("spawn", map[string]any{"prompt": childBrief, "agent": "@scout"}),
			call("spawn", map[string]any{"prompt": childBrief, "label": "mine"}),
			call("spawn", map[string]any{"prompt": childBrief, "agent": bot, "label": "mine2"}),
		}, []string{call("send", map[string]any{"to": "mine", "message": "more", "agent": "@scout"})}, []string{"say done"}), "")
		h.Drain()
		mine := childOf(h, conv, "mine")
		childOf(h, conv, "mine2")
		private := "agent_private: @scout accepts new requests only from the agents the workspace's messaging policy allows."
		wantOutputs(h, first.Run.PublicID, map[string]string{"r2t0": private, "r3t0": private})
		if ct := h.Turns(mine.PublicID); len(ct) != 1 {
			t.Fatalf("a refused send posted a turn: %+v", ct)
		}
	})
}

// TestSendQueued: a queued send posts the sender's own row (author the agent, the sender
// conversation), answers its one-line receipt with title and structured_content, and a send to
// one of the sender's own children brings the reply back as <task_result task="<send call>"
// conversation="…">; "for @handle" names a selected answerer, whose run answers the turn.
func TestSendQueued(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h, conv := convHarness(t, s)
		h.Post(conv, script("Open.", []string{call("spawn", map[string]any{"prompt": childBrief, "label": "kid"})}, []string{"say opened"}), "")
		h.Drain()
		kid := childOf(h, conv, "kid")
		// The child holds each reply on a question, so that the sending turn ends first.
		followUp := "More.\n!mock\nround 1\ncall ask {\"prompt\":\"More?\"}\nround 2\nsay more found"
		second := h.Post(conv, script("Follow up.", []string{call("send", map[string]any{"to": "KID", "message": followUp})},
			[]string{call("send", map[string]any{"to": kid.PublicID, "message": followUp, "agent": "@scout", "wake": "passive"})},
			[]string{"say sent"}), "")
		h.Drain()
		rid := second.Run.PublicID
		kt := h.Turns(kid.PublicID)
		if len(kt) != 3 {
			t.Fatalf("child has %d turns, want the brief and two sends", len(kt))
		}
		wantOutputs(h, rid, map[string]string{
			"r2t0": "Sent to " + kid.PublicID + " (queued).",
			"r3t0": "Sent to " + kid.PublicID + ", for @scout (queued).",
		})
		c := h.Task(rid, "r2t0")
		wantSC := `{"conversation_public_id":"` + kid.PublicID + `","input_public_id":"` + kt[1].PublicID + `","delivery":"queued","deliver_at":null}`
		if deref(c.Title) != "sent to KID" || c.StructuredContent == nil || string(*c.StructuredContent) != wantSC {
			t.Fatalf("title %q structured_content %v\nwant %s", deref(c.Title), c.StructuredContent, wantSC)
		}
		bot := agentID(h, "bot")
		if kt[1].Author.Kind != "agent" || kt[1].Author.PublicID != bot || deref(kt[1].SenderConversationPublicID) != conv || kt[1].Input.Text != followUp {
			t.Fatalf("sent turn %+v", kt[1])
		}
		if r := h.Run(kt[2].RunPublicID); deref(r.AnsweringAgentPublicID) != agentID(h, "scout") {
			t.Fatalf("the selected answerer does not answer: %+v", r.AnsweringAgentPublicID)
		}
		if r := h.Run(rid); r.Status != runs.RunRunning || h.Turns(conv)[2].Status != runs.TurnCompleted {
			t.Fatalf("sending run %s: its turn should be complete, the run open for the replies", r.Status)
		}
		for _, tr := range kt[1:] {
			h.Resolve(tr.RunPublicID, "r2t0-ask-1", `{"content":"yes"}`)
			h.Drain()
		}
		// The first send's reply is auto mail; the second's is a passive hold, read by the
		// next turn before its input.
		env := replyEnvelope("r2t0", kid.PublicID, followUp, "more found")
		var mail []string
		for _, tr := range h.Turns(conv) {
			if tr.Author.Kind == "kernel" {
				mail = append(mail, tr.Input.Text)
			}
		}
		if len(mail) == 0 || mail[len(mail)-1] != env {
			t.Fatalf("kernel mail %q\nwant the last %q", mail, env)
		}
		if r := h.Run(rid); r.Status != runs.RunCompleted {
			t.Fatalf("sending run %s", r.Status)
		}
		next := h.Post(conv, "Anything?\n!mock\nround 1\nsay ok", "")
		h.Drain()
		req := h.SealedRequest(next.Run.PublicID, "r1")
		n := len(req.Entries)
		if want := replyEnvelope("r3t0", kid.PublicID, followUp, "more found"); req.Entries[n-2].Content[0].Text != want {
			t.Fatalf("held delivery %q\nwant %q", req.Entries[n-2].Content[0].Text, want)
		}
	})
}

// TestStatusAndCancel: status reports running or idle, the queue, the answerer and the
// messages from that conversation waiting in the caller's queue; cancel stops the work this run
// started there (the child's running reply), its reply arrives marked canceled, and a second
// cancel finds nothing left.
func TestStatusAndCancel(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h, conv := convHarness(t, s)
		hold := "Hold.\n!mock\nround 1\ncall ask {\"prompt\":\"Go on?\"}\nround 2\nsay held"
		first := h.Post(conv, script("Open.", []string{call("spawn", map[string]any{"prompt": hold, "label": "kid"})},
			[]string{call("status", map[string]any{"to": "kid"})},
			[]string{call("cancel", map[string]any{"to": "kid"})},
			[]string{call("cancel", map[string]any{"to": "kid"})},
			[]string{call("status", map[string]any{"to": conv})},
			[]string{"say done"}), "")
		h.Drain()
		kid := childOf(h, conv, "kid")
		rid := first.Run.PublicID
		wantOutputs(h, rid, map[string]string{
			"r3t0": "Conversation " + kid.PublicID + ": running; queue: 0 waiting; answered by @bot.",
			"r4t0": "Canceled the work this run started in conversation " + kid.PublicID + ".",
			"r5t0": "Nothing to cancel: this run has no unfinished work in conversation " + kid.PublicID + ".",
			"r6t0": "Conversation " + conv + ": running; queue: 0 waiting; answered by @bot.",
		})
		c := h.Task(rid, "r4t0")
		if want := `{"conversation_public_id":"` + kid.PublicID + `","canceled":true}`; deref(c.Title) != "canceled work in kid" || string(*c.StructuredContent) != want {
			t.Fatalf("cancel title %q structured_content %s", deref(c.Title), *c.StructuredContent)
		}
		st := h.Task(rid, "r3t0")
		if want := `{"conversation_public_id":"` + kid.PublicID + `","state":"running","queued":0,"answered_by":"@bot","waiting_for_you":0}`; deref(st.Title) != "status of kid" || string(*st.StructuredContent) != want {
			t.Fatalf("status title %q structured_content %s", deref(st.Title), *st.StructuredContent)
		}
		kt := h.Turns(kid.PublicID)
		if len(kt) != 1 || kt[0].Status != runs.TurnCanceled {
			t.Fatalf("child turns %+v", kt)
		}
		// The reply the child owed arrives marked canceled, read by the next round.
		canceled := "<task_result task=\"r2t0\" status=\"canceled\" conversation=\"" + kid.PublicID + "\">\n<prompt>" + hold + "</prompt>\nerror: task_canceled\n</task_result>"
		if d := h.Task(rid, "r2t0-delegation-1"); d.Status != runs.StatusCompleted || deref(d.Output) != canceled {
			t.Fatalf("delegation %s %q\nwant %q", d.Status, deref(d.Output), canceled)
		}

		// Messages from a peer conversation wait in the caller's queue while its turn runs.
		peer, err := h.Conv.CreateConversation(h.Ctx, h.Actor, conversationBody(`{"answering_agent_public_id":"`+agentID(h, "bot")+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		waiting := h.Post(conv, script("Wait.", []string{`call ask {"prompt":"ready?"}`}, []string{call("status", map[string]any{"to": peer.PublicID})}, []string{"say waited"}), "")
		h.Drain()
		for i := 0; i < 2; i++ {
			h.Post(peer.PublicID, script("Poke.", []string{call("send", map[string]any{"to": conv, "message": "poke"})}, []string{"say poked"}), "")
			h.Drain()
		}
		h.Resolve(waiting.Run.PublicID, "r2t0-ask-1", `{"content":"yes"}`)
		h.Drain()
		wantOutputs(h, waiting.Run.PublicID, map[string]string{
			"r3t0": "Conversation " + peer.PublicID + ": idle; queue: 0 waiting; answered by @bot.\n2 messages from it wait for you, delivered when you end your turn.",
		})
	})
}

// TestWaitedSpawnAndTurnLifetime: a waited spawn's call settles with the child's reply envelope
// (its paired result); an await that expires first ends only the waiting, with the two-line
// text and the receipt's structured_content with wait true, and the reply then comes back as
// mail. A turn-lifetime spawn holds the run's final delivery until the reply arrives.
func TestWaitedSpawnAndTurnLifetime(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h, conv := convHarness(t, s)
		first := h.Post(conv, script("Wait.", []string{call("spawn", map[string]any{"prompt": childBrief, "wait": true})},
			[]string{"say read: {{last_result}}"}), "")
		h.Drain()
		var child string
		for _, c := range mustList(h) {
			if c.ParentConversationPublicID != nil && *c.ParentConversationPublicID == conv {
				child = c.PublicID
			}
		}
		env := replyEnvelope("r2t0", child, childBrief, "found it")
		rid := first.Run.PublicID
		c := h.Task(rid, "r2t0")
		if c.Status != runs.StatusCompleted || deref(c.Output) != env || deref(c.Title) != "spawned "+child {
			t.Fatalf("waited spawn %s %q title %q\nwant %q", c.Status, deref(c.Output), deref(c.Title), env)
		}
		if r := h.Run(rid); deref(r.Answer) != "read: "+env {
			t.Fatalf("answer %q", deref(r.Answer))
		}
		if turns := h.Turns(conv); len(turns) != 1 {
			t.Fatalf("a waited reply was mailed too: %d turns", len(turns))
		}

		// The await expires before the reply.
		slow := "Slow.\n!mock\nround 1\ncall ask {\"prompt\":\"Later?\"}\nround 2\nsay late reply"
		second := h.Post(conv, script("Wait long.", []string{call("spawn", map[string]any{"prompt": slow, "label": "slow", "wait": true})},
			[]string{"say gave up: {{last_result}}"}), "")
		h.Drain()
		h.Clock.Advance(conversations.SpawnAwaitClock + time.Second)
		h.Sweep()
		h.Drain()
		slowConv := childOf(h, conv, "slow")
		two := "Spawned conversation " + slowConv.PublicID + " (label \"slow\"), answered by @bot.\n(the conversation is still working; its reply will reach you later in a message that is not from the person)"
		sc := `{"conversation_public_id":"` + slowConv.PublicID + `","label":"slow","answered_by":"@bot","run_public_id":"` + second.Run.PublicID + `","task":"r2t0","wait":true}`
		c = h.Task(second.Run.PublicID, "r2t0")
		if c.Status != runs.StatusCompleted || deref(c.Output) != two || c.StructuredContent == nil || string(*c.StructuredContent) != sc {
			t.Fatalf("expired wait %s %q %v", c.Status, deref(c.Output), c.StructuredContent)
		}
		if a := h.Task(second.Run.PublicID, "r2t0-spawn-1"); a.Status != runs.StatusTimedOut {
			t.Fatalf("await %s", a.Status)
		}
		kt := h.Turns(slowConv.PublicID)
		h.Resolve(kt[0].RunPublicID, "r2t0-ask-1", `{"content":"yes"}`)
		h.Drain()
		late := replyEnvelope("r2t0", slowConv.PublicID, slow, "late reply")
		pt := h.Turns(conv)
		if last := pt[len(pt)-1]; last.Author.Kind != "kernel" || last.Input.Text != late {
			t.Fatalf("late reply mail %+v", last)
		}

		// Turn lifetime: the run's reply is not final before the child's reply arrives.
		third := h.Post(conv, script("Hold the turn.", []string{call("spawn", map[string]any{"prompt": slow, "label": "held", "lifetime": "turn"})},
			[]string{"say first answer"}, []string{"say synthesis: {{last_result}}"}), "")
		h.Drain()
		held := childOf(h, conv, "held")
		if r := h.Run(third.Run.PublicID); r.Status != runs.RunRunning {
			t.Fatalf("turn-lifetime run %s before the reply", r.Status)
		}
		if d := h.Task(third.Run.PublicID, "r2t0-delegation-1"); d.Status != runs.StatusDispatched || d.Lifetime != runs.LifetimeTurn {
			t.Fatalf("delegation row %s %s", d.Status, d.Lifetime)
		}
		h.Resolve(h.Turns(held.PublicID)[0].RunPublicID, "r2t0-ask-1", `{"content":"yes"}`)
		h.Drain()
		heldEnv := replyEnvelope("r2t0", held.PublicID, slow, "late reply")
		if r := h.Run(third.Run.PublicID); r.Status != runs.RunCompleted || deref(r.Answer) != "synthesis: "+heldEnv {
			t.Fatalf("turn-lifetime run %s answer %q", r.Status, deref(r.Answer))
		}
	})
}

func mustList(h *harness) []*conversations.ConversationDoc {
	h.T.Helper()
	page, err := h.Conv.ListConversations(h.Ctx, h.Actor, "", "", 100)
	if err != nil {
		h.T.Fatal(err)
	}
	return page.Conversations
}

// TestSteerAndSchedule: a steer joins the reply running there, landing at its next model
// boundary as a trailing user message and promising no reply; with nothing running it queues.
// A scheduled send is held, takes its queue position when the sweeper releases it, and a
// scheduled send to one's own child brings the reply back; a send to oneself is a reminder.
func TestSteerAndSchedule(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h, conv := convHarness(t, s)
		hold := "Hold.\n!mock\nround 1\ncall ask {\"prompt\":\"Go on?\"}\nround 2\nsay steered by the message"
		h.Post(conv, script("Open.", []string{call("spawn", map[string]any{"prompt": hold, "label": "kid"})}, []string{"say opened"}), "")
		h.Drain()
		first := h.Post(conv, script("Steer.", []string{call("send", map[string]any{"to": "kid", "message": "focus on tests", "steer": true})},
			[]string{"say steered"}), "")
		h.Drain()
		kid := childOf(h, conv, "kid")
		rid := first.Run.PublicID
		wantOutputs(h, rid, map[string]string{"r2t0": "Sent to " + kid.PublicID + " (steering)."})
		if c := h.Task(rid, "r2t0"); !strings.Contains(string(*c.StructuredContent), `"delivery":"steering","deliver_at":null`) {
			t.Fatalf("steer structured_content %s", *c.StructuredContent)
		}
		kt := h.Turns(kid.PublicID)
		if len(kt) != 1 {
			t.Fatalf("a steer opened a turn: %d turns", len(kt))
		}
		h.Resolve(kt[0].RunPublicID, "r2t0-ask-1", `{"content":"yes"}`)
		h.Drain()
		if r := h.Run(kt[0].RunPublicID); deref(r.Answer) != "steered by the message" {
			t.Fatalf("steered answer %q", deref(r.Answer))
		}
		req := h.SealedRequest(kt[0].RunPublicID, "r2")
		if last := req.Entries[len(req.Entries)-1]; last.Role != "user" || last.Content[0].Text != "focus on tests" {
			t.Fatalf("the steer is not the trailing user message: %+v", last)
		}
		if d, err := h.Conv.ReadTask(h.Ctx, h.Actor, rid, "r2t0-delegation-1"); err == nil {
			t.Fatalf("a steer promised a reply: %+v", d)
		}
		// The landed steer belongs to the child's turn: the history tools read it as its steers.
		var kidTurn int64
		if err := h.S.Reader().Get(h.Ctx, &kidTurn, `SELECT id FROM turns WHERE public_id = ?`, kt[0].PublicID); err != nil {
			t.Fatal(err)
		}
		steers, err := store.SteersOfTurns(h.Ctx, h.S.Reader(), []int64{kidTurn, kidTurn + 1000})
		if err != nil {
			t.Fatal(err)
		}
		if want := []store.TurnSteer{{TurnID: kidTurn, Text: "focus on tests"}}; !reflect.DeepEqual(steers, want) {
			t.Fatalf("steers of the child's turn = %+v, want %+v", steers, want)
		}

		// Nothing running: the steer queues.
		second := h.Post(conv, script("Steer idle.", []string{call("send", map[string]any{"to": "kid", "message": childBrief, "steer": true})},
			[]string{"say queued"}), "")
		h.Drain()
		wantOutputs(h, second.Run.PublicID, map[string]string{"r2t0": "Sent to " + kid.PublicID + " (queued)."})
		if kt = h.Turns(kid.PublicID); len(kt) != 2 || kt[1].Input.Text != childBrief {
			t.Fatalf("the idle steer did not queue: %+v", kt)
		}

		// Scheduled: held until the sweeper releases it.
		third := h.Post(conv, script("Later.", []string{
			call("send", map[string]any{"to": "kid", "message": childBrief, "deliver_in": "10m"}),
			call("send", map[string]any{"to": conv, "message": "Reminder.\n!mock\nround 1\nsay reminded", "deliver_at": "2030-01-15T10:05:00+01:00"}),
		}, []string{"say scheduled"}), "")
		h.Drain()
		rid = third.Run.PublicID
		wantOutputs(h, rid, map[string]string{
			"r2t0": "Sent to " + kid.PublicID + " (scheduled for 2030-01-15T09:10:00Z).",
			"r2t1": "Sent to " + conv + " (scheduled for 2030-01-15T09:05:00Z).",
		})
		if c := h.Task(rid, "r2t0"); !strings.Contains(string(*c.StructuredContent), `"delivery":"scheduled","deliver_at":"2030-01-15T09:10:00Z"`) {
			t.Fatalf("scheduled structured_content %s", *c.StructuredContent)
		}
		if kt = h.Turns(kid.PublicID); len(kt) != 2 {
			t.Fatalf("a scheduled send was posted early: %d turns", len(kt))
		}
		h.Clock.Advance(10 * time.Minute)
		h.Sweep()
		h.Drain()
		kt = h.Turns(kid.PublicID)
		if len(kt) != 3 || kt[2].Input.Text != childBrief || kt[2].Status != runs.TurnCompleted {
			t.Fatalf("released turn %+v", kt)
		}
		env := replyEnvelope("r2t0", kid.PublicID, childBrief, "found it")
		var mail, reminder bool
		for _, tr := range h.Turns(conv) {
			mail = mail || (tr.Author.Kind == "kernel" && tr.Input.Text == env)
			reminder = reminder || (tr.Author.Kind == "agent" && strings.HasPrefix(tr.Input.Text, "Reminder.") && tr.Answer != nil && tr.Answer.Text == "reminded")
		}
		if !mail || !reminder {
			t.Fatalf("reply mail %v, reminder %v: %+v", mail, reminder, h.Turns(conv))
		}
	})
}

// TestStopCancelsDerivedWork: stopping the originating run suppresses the undelivered reply and
// cancels the unfinished work derived from its brief.
func TestStopCancelsDerivedWork(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h, conv := convHarness(t, s)
		hold := "Hold.\n!mock\nround 1\ncall ask {\"prompt\":\"Go on?\"}\nround 2\nsay held"
		first := h.Post(conv, script("Open.", []string{call("spawn", map[string]any{"prompt": hold, "label": "kid"})}, []string{"say opened"}), "")
		h.Drain()
		kid := childOf(h, conv, "kid")
		if _, err := h.Conv.StopRun(h.Ctx, h.Actor, first.Run.PublicID, true); err != nil {
			t.Fatal(err)
		}
		h.Drain()
		if kt := h.Turns(kid.PublicID); len(kt) != 1 || kt[0].Status != runs.TurnCanceled {
			t.Fatalf("child turns %+v", kt)
		}
		if d := h.Task(first.Run.PublicID, "r2t0-delegation-1"); d.Status != runs.StatusCanceled {
			t.Fatalf("delegation %s", d.Status)
		}
		if pt := h.Turns(conv); len(pt) != 1 {
			t.Fatalf("a suppressed reply was mailed: %d turns", len(pt))
		}
	})
}

// TestSendDoorWords: the input door's refusals are relayed by word with the door's sentence:
// an archived addressee (conversation_archived) and a full queue (input_queue_full).
func TestSendDoorWords(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h, conv := convHarness(t, s)
		busy := h.Conversation()
		h.Post(busy, "Hold.\n!mock\nround 1\ncall ask {\"prompt\":\"Go on?\"}\nround 2\nsay held", "")
		h.Drain()
		for i := 0; i < conversations.MaxQueuedTurns; i++ {
			h.Post(busy, "Queued.", "")
		}
		h.Post(conv, script("Open.", []string{call("spawn", map[string]any{"prompt": childBrief, "label": "kid"})}, []string{"say opened"}), "")
		h.Drain()
		kid := childOf(h, conv, "kid")
		if _, err := h.Conv.Archive(h.Ctx, h.Actor, kid.PublicID); err != nil {
			t.Fatal(err)
		}
		p := h.Post(conv, script("Doors.", []string{
			call("send", map[string]any{"to": busy, "message": "one more"}),
			call("send", map[string]any{"to": "kid", "message": "hello"}),
			call("send", map[string]any{"to": "kid", "message": "later", "deliver_in": "1h"}),
		}, []string{"say done"}), "")
		h.Drain()
		wantOutputs(h, p.Run.PublicID, map[string]string{
			"r2t0": "input_queue_full: The conversation already has 16 queued turns.",
			"r2t1": "conversation_archived: The conversation is archived.",
			"r2t2": "conversation_archived: The conversation is archived.",
		})
	})
}

// TestWaitOnSpawn: a wait on a spawn call that opened its child observes the child's reply to
// the brief, with the conversation attribute.
func TestWaitOnSpawn(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h, conv := convHarness(t, s)
		hold := "Hold.\n!mock\nround 1\ncall ask {\"prompt\":\"Go on?\"}\nround 2\nsay held"
		p := h.Post(conv, script("Open.", []string{call("spawn", map[string]any{"prompt": hold, "label": "kid"})},
			[]string{call("wait", map[string]any{"task": "r2t0"})}, []string{"say waited"}), "")
		h.Drain()
		kid := childOf(h, conv, "kid")
		if w := h.Task(p.Run.PublicID, "r3t0"); w.Status != runs.StatusRunning {
			t.Fatalf("wait %s before the reply", w.Status)
		}
		h.Resolve(h.Turns(kid.PublicID)[0].RunPublicID, "r2t0-ask-1", `{"content":"yes"}`)
		h.Drain()
		if w := h.Task(p.Run.PublicID, "r3t0"); w.Status != runs.StatusCompleted || deref(w.Output) != replyEnvelope("r2t0", kid.PublicID, hold, "held") {
			t.Fatalf("wait %s %q", w.Status, deref(w.Output))
		}
	})
}
