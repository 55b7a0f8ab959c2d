package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/internal/testserver"
	"github.com/nexuskernel/nexus/sdk/client"
)

// convImports are the conversation tools an agent declares, with ask for a child to hold on.
var convImports = []string{"nexus.conversation.spawn", "nexus.conversation.send", "nexus.conversation.status", "nexus.conversation.cancel", "nexus.human.ask"}

// Child briefs: each a script of its own. Nested scripts never use {{…}}.
const (
	convChildBrief = "Find it.\n!mock\nround 1\nsay found it"
	convHoldBrief  = "Hold.\n!mock\nround 1\ncall ask {\"prompt\":\"Go on?\"}\nround 2\nsay held"
)

// convFixture is a server whose agent @lead declares the conversation tools, and a
// conversation it answers.
type convFixture struct {
	admin *client.Client
	conv  string
}

func newConvFixture(t *testing.T, d store.Dialect) *convFixture {
	t.Helper()
	srv := testserver.Start(t, testserver.Options{Dialect: d})
	admin := srv.Client()
	ctx := context.Background()
	agent, err := admin.CreateAgent(ctx, "default", &client.CreateAgentRequest{Handle: "lead", DisplayName: "Lead"})
	if err != nil {
		t.Fatal(err)
	}
	mode := "bypass"
	if _, err := srv.ClientWith(agent.Token).PutProfileConfiguration(ctx, &client.ProfileConfigurationRequest{Configuration: client.ProfileConfiguration{
		KernelTools: convImports, ApprovalMode: &mode}}); err != nil {
		t.Fatal(err)
	}
	conv, err := admin.CreateConversation(ctx, "default", map[string]any{"answering_agent_public_id": agent.Agent.PublicID})
	if err != nil {
		t.Fatal(err)
	}
	return &convFixture{admin: admin, conv: conv.Conversation.PublicID}
}

// post posts a message and answers its run's public id.
func (f *convFixture) post(t *testing.T, conv, text string) string {
	t.Helper()
	msg, err := f.admin.PostMessage(context.Background(), "default", conv, map[string]any{"text": text}, "")
	if err != nil {
		t.Fatal(err)
	}
	return msg.Run.PublicID
}

// turnInputs are a conversation's turns as {author kind, input text, status}.
func (f *convFixture) turnInputs(t *testing.T, conv string) []struct{ Author, Text, Status, Run string } {
	t.Helper()
	h, err := f.admin.History(context.Background(), "default", conv, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []struct{ Author, Text, Status, Run string }
	var raw struct {
		Turns []struct {
			Author struct {
				Kind string `json:"kind"`
			} `json:"author"`
			Input struct {
				Text string `json:"text"`
			} `json:"input"`
			Status string `json:"status"`
			Run    string `json:"run_public_id"`
		} `json:"turns"`
	}
	if err := json.Unmarshal(h.Raw, &raw); err != nil {
		t.Fatal(err)
	}
	for _, tr := range raw.Turns {
		out = append(out, struct{ Author, Text, Status, Run string }{tr.Author.Kind, tr.Input.Text, tr.Status, tr.Run})
	}
	return out
}

// spawned reads the child conversation a spawn call opened, from its structured_content.
func spawned(t *testing.T, c *client.Client, run, key string) string {
	t.Helper()
	tk := task(t, c, run, key)
	var sc struct {
		Conversation string `json:"conversation_public_id"`
	}
	if tk.Task.StructuredContent == nil || json.Unmarshal(*tk.Task.StructuredContent, &sc) != nil || sc.Conversation == "" {
		t.Fatalf("spawn call %s", tk.Raw)
	}
	return sc.Conversation
}

// replied waits until the reply a call is owed has settled its delegation row.
func replied(t *testing.T, c *client.Client, run, key string) {
	t.Helper()
	eventually(t, 30*time.Second, "the reply to "+key, func() bool {
		return task(t, c, run, key+"-delegation-1").Task.Status == "completed"
	})
}

func convReply(key, child, prompt, status, body string) string {
	return "<task_result task=\"" + key + "\" status=\"" + status + "\" conversation=\"" + child + "\">\n<prompt>" + prompt + "</prompt>\n" + body + "\n</task_result>"
}

// TestSpawnOverHTTP: a spawn opens a labeled child conversation whose brief is answered there,
// and the reply comes back on the parent conversation as a kernel-authored turn.
func TestSpawnOverHTTP(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			f := newConvFixture(t, d)
			// The child holds its reply on a question, so that the parent's turn ends first and the
			// reply comes back as mail.
			run := f.post(t, f.conv, mockScript("Spawn.", line("spawn", map[string]any{"prompt": convHoldBrief, "label": "research"}),
				"say spawned", "say mail read"))
			eventually(t, 30*time.Second, "the spawning turn completing", func() bool {
				ts := f.turnInputs(t, f.conv)
				return len(ts) == 1 && ts[0].Status == "completed"
			})
			child := spawned(t, f.admin, run, "r2t0")
			c := task(t, f.admin, run, "r2t0")
			receipt := "Spawned conversation " + child + " (label \"research\"), answered by @lead, in the background. Its reply will reach you later as a <task_result task=\"r2t0\" conversation=\"" +
				child + "\"> message, which is not from the person.\nTask reference: run_public_id=\"" + run + "\", task=\"r2t0\""
			if deref(c.Task.Output) != receipt || deref(c.Task.Title) != "spawned research" {
				t.Fatalf("spawn call %s", c.Raw)
			}
			ct := f.turnInputs(t, child)
			if len(ct) != 1 || ct[0].Author != "agent" || ct[0].Text != convHoldBrief {
				t.Fatalf("child turns %+v", ct)
			}
			inboxAsk(t, f.admin, ct[0].Run)
			if _, err := f.admin.Resolve(context.Background(), "default", ct[0].Run, "r2t0-ask-1", json.RawMessage(`{"content":"yes"}`)); err != nil {
				t.Fatal(err)
			}
			var turns []struct{ Author, Text, Status, Run string }
			eventually(t, 30*time.Second, "the reply as kernel mail", func() bool {
				turns = f.turnInputs(t, f.conv)
				return len(turns) == 2 && turns[1].Status == "completed"
			})
			if want := convReply("r2t0", child, convHoldBrief, "completed", "held"); turns[1].Author != "kernel" || turns[1].Text != want {
				t.Fatalf("mail %+v\nwant %q", turns[1], want)
			}
			if r := waitRun(t, f.admin, run, 30*time.Second); r.Status != "completed" {
				t.Fatalf("spawning run %s", r.Status)
			}
		})
	}
}

// TestSendOverHTTP: a queued send to one's own child is answered there and the reply comes back
// keyed by the send call; a refused door word is relayed as an error result.
func TestSendOverHTTP(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			f := newConvFixture(t, d)
			run := f.post(t, f.conv, mockScript("Spawn.", line("spawn", map[string]any{"prompt": convChildBrief, "label": "kid"}), "say spawned"))
			waitRun(t, f.admin, run, 30*time.Second)
			child := spawned(t, f.admin, run, "r2t0")
			replied(t, f.admin, run, "r2t0")
			more := "More.\n!mock\nround 1\nsay more found"
			run = f.post(t, f.conv, mockScript("Send.", line("send", map[string]any{"to": "kid", "message": more})+"\n"+
				line("send", map[string]any{"to": f.conv, "message": "x", "deliver_in": "31d"}), "say sent"))
			if r := waitRun(t, f.admin, run, 30*time.Second); r.Status != "completed" {
				t.Fatalf("run %s", r.Status)
			}
			if c := task(t, f.admin, run, "r2t0"); deref(c.Task.Output) != "Sent to "+child+" (queued)." || deref(c.Task.Title) != "sent to kid" {
				t.Fatalf("send %s", c.Raw)
			}
			if c := task(t, f.admin, run, "r2t1"); deref(c.Task.Output) != "schedule_out_of_range: the delivery time must be in the future and at most 30 days ahead." {
				t.Fatalf("out of range %s", c.Raw)
			}
			want := convReply("r2t0", child, more, "completed", "more found")
			// The reply comes back once, keyed by the send call: as kernel mail, or read by the
			// sending turn's next round when it settles while that turn still works.
			eventually(t, 30*time.Second, "the send's reply", func() bool {
				return deref(task(t, f.admin, run, "r2t0-delegation-1").Task.Output) == want
			})
		})
	}
}

// TestStatusOverHTTP: status reports a child's state, queue and answerer, and an unknown
// addressee is refused.
func TestStatusOverHTTP(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			f := newConvFixture(t, d)
			run := f.post(t, f.conv, mockScript("Spawn.", line("spawn", map[string]any{"prompt": convChildBrief, "label": "kid"}), "say spawned"))
			waitRun(t, f.admin, run, 30*time.Second)
			child := spawned(t, f.admin, run, "r2t0")
			replied(t, f.admin, run, "r2t0")
			run = f.post(t, f.conv, mockScript("Status.", line("status", map[string]any{"to": "kid"})+"\n"+line("status", map[string]any{"to": "nope"}), "say read"))
			waitRun(t, f.admin, run, 30*time.Second)
			c := task(t, f.admin, run, "r2t0")
			if deref(c.Task.Output) != "Conversation "+child+": idle; queue: 0 waiting; answered by @lead." || deref(c.Task.Title) != "status of kid" ||
				string(*c.Task.StructuredContent) != `{"conversation_public_id":"`+child+`","state":"idle","queued":0,"answered_by":"@lead","waiting_for_you":0}` {
				t.Fatalf("status %s", c.Raw)
			}
			if c := task(t, f.admin, run, "r2t1"); deref(c.Task.Output) != `unknown_conversation: no conversation "nope" that you can read.` || deref(c.Task.Title) != "status refused" {
				t.Fatalf("unknown %s", c.Raw)
			}
		})
	}
}

// TestCancelOverHTTP: cancel stops the child's reply this run started, the reply arrives marked
// canceled, and a second cancel finds nothing left.
func TestCancelOverHTTP(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			f := newConvFixture(t, d)
			run := f.post(t, f.conv, mockScript("Spawn and cancel.", line("spawn", map[string]any{"prompt": convHoldBrief, "label": "kid"}),
				line("cancel", map[string]any{"to": "kid"}), line("cancel", map[string]any{"to": "kid"}), "say done"))
			if r := waitRun(t, f.admin, run, 30*time.Second); r.Status != "completed" {
				t.Fatalf("run %s", r.Status)
			}
			child := spawned(t, f.admin, run, "r2t0")
			if c := task(t, f.admin, run, "r3t0"); deref(c.Task.Output) != "Canceled the work this run started in conversation "+child+"." ||
				deref(c.Task.Title) != "canceled work in kid" || string(*c.Task.StructuredContent) != `{"conversation_public_id":"`+child+`","canceled":true}` {
				t.Fatalf("cancel %s", c.Raw)
			}
			if c := task(t, f.admin, run, "r4t0"); deref(c.Task.Output) != "Nothing to cancel: this run has no unfinished work in conversation "+child+"." {
				t.Fatalf("second cancel %s", c.Raw)
			}
			if ct := f.turnInputs(t, child); len(ct) != 1 || ct[0].Status != "canceled" {
				t.Fatalf("child turns %+v", ct)
			}
			d := task(t, f.admin, run, "r2t0-delegation-1")
			if want := convReply("r2t0", child, convHoldBrief, "canceled", "error: task_canceled"); deref(d.Task.Output) != want {
				t.Fatalf("the owed reply %s\nwant %q", d.Raw, want)
			}
		})
	}
}
