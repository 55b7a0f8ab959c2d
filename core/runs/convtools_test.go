package runs_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// convKernelTools are the kernel tools the conversation tests' agents declare.
const convKernelTools = `["nexus.conversation.spawn","nexus.conversation.send","nexus.conversation.status","nexus.conversation.cancel","nexus.graph.delegate_task","nexus.human.ask"]`

// convProfile is an agent profile that declares the conversation tools.
type convProfile struct{ decl runs.Declarations }

func (p *convProfile) AcceptProfile(ctx context.Context, q store.Querier, agentID int64, in *runs.ProfileAcceptance) (*runs.AcceptedProfile, error) {
	f, err := p.decl.AcceptStep(ctx, q, &runs.StepDeclaration{KernelTools: json.RawMessage(convKernelTools),
		Selection: in.Selection, ToolNames: in.ToolNames, NarrowPath: in.Path})
	if err != nil {
		return nil, err
	}
	return &runs.AcceptedProfile{Frozen: *f, ApprovalMode: runs.ModeBypass, ApprovalRules: []byte("[]")}, nil
}

// convHarness is a conversation answered by @bot whose profile declares the conversation tools,
// and a second agent @scout.
func convHarness(t *testing.T, s *store.Store) (*harness, string) {
	t.Helper()
	p := &convProfile{}
	h, conv := conversationHarness(t, s, p)
	p.decl = h.decls
	a := &store.Agent{PublicID: store.NewPublicID(), WorkspaceID: h.actor.WorkspaceID, Handle: "scout", DisplayName: "Scout", StewardUserID: h.actor.ID}
	if err := s.Write(h.ctx, func(tx *store.Tx) error { return store.InsertAgent(h.ctx, tx, a) }); err != nil {
		t.Fatal(err)
	}
	return h, conv
}

// childOf reads the child conversation of conv with this label.
func (h *harness) childOf(conv, label string) *runs.ConversationDoc {
	h.t.Helper()
	page, err := h.e.ListConversations(h.ctx, h.actor, "", "", 100)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, c := range page.Conversations {
		if c.ParentConversationPublicID != nil && *c.ParentConversationPublicID == conv && deref(c.Label) == label {
			return c
		}
	}
	h.t.Fatalf("no child %q of %s", label, conv)
	return nil
}

func (h *harness) agentID(handle string) string {
	h.t.Helper()
	var id string
	if err := h.s.Reader().Get(h.ctx, &id, `SELECT public_id FROM agents WHERE handle = ?`, handle); err != nil {
		h.t.Fatal(err)
	}
	return id
}

// childBrief is a spawned child's brief: its own one-round script.
const childBrief = "Find it.\n!mock\nround 1\nsay found it"

// replyEnvelope is a child's completed reply as its parent reads it.
func replyEnvelope(key, child, prompt, body string) string {
	return "<task_result task=\"" + key + "\" status=\"completed\" conversation=\"" + child + "\">\n<prompt>" + prompt + "</prompt>\n" + body + "\n</task_result>"
}

// TestSpawnDetached: a detached spawn opens a labeled child conversation answered by a fresh
// copy of the caller's agent, posts the brief as its first input (authored by the agent, with
// the sender conversation), answers with the receipt, title and structured_content of
// kernel-tools.md §5.4.3, and the child's reply comes back once as a kernel-authored turn on the
// parent conversation.
func TestSpawnDetached(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h, conv := convHarness(t, s)
		msg := script("Spawn.",
			[]string{call("spawn", map[string]any{"prompt": childBrief, "label": "Research"})},
			[]string{"say spawned"},
			[]string{"say mail read: {{last_result}}"})
		first := h.post(conv, msg, "")
		h.drain()
		child := h.childOf(conv, "research")
		bot := h.agentID("bot")
		if child.AnsweringAgentPublicID != bot || child.CreatedBy.Kind != "agent" || child.CreatedBy.PublicID != bot {
			t.Fatalf("child %+v", child)
		}
		rid := first.Run.PublicID
		receipt := "Spawned conversation " + child.PublicID + " (label \"research\"), answered by @bot, in the background. Its reply will reach you later as a <task_result task=\"r2t0\" conversation=\"" +
			child.PublicID + "\"> message, which is not from the person.\nTask reference: run_public_id=\"" + rid + "\", task=\"r2t0\""
		c := h.task(rid, "r2t0")
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
		ct := h.turns(child.PublicID)
		if len(ct) != 1 || ct[0].Author.Kind != "agent" || ct[0].Author.PublicID != bot || deref(ct[0].SenderConversationPublicID) != conv ||
			ct[0].Input.Text != childBrief || ct[0].Status != runs.TurnCompleted || ct[0].Answer.Text != "found it" {
			t.Fatalf("child turns %+v", ct)
		}
		pt := h.turns(conv)
		env := replyEnvelope("r2t0", child.PublicID, childBrief, "found it")
		if len(pt) != 2 || pt[1].Author.Kind != "kernel" || pt[1].Input.Text != env {
			t.Fatalf("parent turns %d %+v", len(pt), pt[len(pt)-1])
		}
		if pt[1].Answer == nil || pt[1].Answer.Text != "mail read: "+env {
			t.Fatalf("kernel turn answer %+v", pt[1].Answer)
		}
		if r := h.run(rid); r.Status != runs.RunCompleted {
			t.Fatalf("originating run %s", r.Status)
		}
	})
}

// wantOutputs checks the output text of each of a run's tasks by key.
func (h *harness) wantOutputs(run string, want map[string]string) {
	h.t.Helper()
	for key, text := range want {
		got := h.task(run, key)
		if deref(got.Output) != text {
			h.t.Errorf("%s output %q\nwant %q", key, deref(got.Output), text)
		}
	}
}

// TestConversationToolRefusals: every argument and addressing refusal of spawn, send, status and
// cancel is an error result with the exact text of kernel-tools.md §5.4–§5.7, and changes
// nothing.
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
		first := h.post(conv, script("Refusals.", calls, []string{"say done"}), "")
		h.drain()
		rid := first.Run.PublicID
		dup := h.childOf(conv, "dup")
		h.wantOutputs(rid, map[string]string{
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
			got := h.task(rid, key)
			if deref(got.Title) != title || got.IsError == nil || !*got.IsError {
				t.Errorf("%s title %q is_error %v", key, deref(got.Title), got.IsError)
			}
		}
		sc := h.task(rid, "r2t9").StructuredContent
		if want := `{"error":{"key":"unknown_conversation","detail":"no conversation \"nope\" that you can read."}}`; sc == nil || string(*sc) != want {
			t.Errorf("structured_content %v, want %s", sc, want)
		}
		// Only the first spawn made a conversation: refusals change nothing.
		page, err := h.e.ListConversations(h.ctx, h.actor, "", "", 100)
		if err != nil || len(page.Conversations) != 2 {
			t.Fatalf("%d conversations, want the parent and one child (%v)", len(page.Conversations), err)
		}

		// A standalone run has no conversation.
		kt := `"kernel_tools":` + convKernelTools
		for _, tool := range []string{"spawn", "send", "status", "cancel"} {
			c := h.create(modelStep(script("Alone.", []string{call(tool, map[string]any{"to": conv, "prompt": "x", "message": "x"})}, []string{"say done"}), kt))
			h.drain()
			h.wantOutputs(c.Run.PublicID, map[string]string{"r2t0": "no_conversation: " + tool + " needs a conversation; this run has none."})
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
		other, err := h.e.CreateConversation(h.ctx, h.actor, json.RawMessage(`{"answering_agent_public_id":"`+h.agentID("scout")+`"}`))
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
		first := h.post(conv, script("Tree.", []string{call("spawn", map[string]any{"prompt": brief, "label": "kid", "wait": true})},
			[]string{"say parent done"}), "")
		h.drain()
		kid := h.childOf(conv, "kid")
		kt := h.turns(kid.PublicID)
		if len(kt) != 1 || kt[0].Status != runs.TurnCompleted {
			t.Fatalf("child turns %+v", kt)
		}
		h.wantOutputs(kt[0].RunPublicID, map[string]string{
			"r2t0": "parent_waiting: your parent is waiting for your reply; end your turn with the answer instead of sending.",
			"r2t1": "ancestor_conversation: " + conv + " is above you in the conversation tree; finish your reply to answer it.",
			"r2t2": "Conversation " + conv + ": running; queue: 0 waiting; answered by @bot.",
			"r2t3": "not_authorized: you may read " + other.PublicID + " but not write in it.",
			"r2t4": "not_authorized: you may read " + other.PublicID + " but not write in it.",
		})
		if r := h.run(first.Run.PublicID); r.Status != runs.RunCompleted || deref(r.Answer) != "parent done" {
			t.Fatalf("parent run %s %q", r.Status, deref(r.Answer))
		}
	})
}
