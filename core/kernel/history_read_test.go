package kernel_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// TestSessionReadRefusals pins every error result of session_read
// (docs/agent-tools.md#delegation-and-conversations): the argument sentences in parameter order,
// the cursor rule, unknown_conversation for a conversation that does not exist, is of another
// workspace, or that the principal may no longer read, and turn_not_found for a turn outside the
// conversation's history; all with the refusal form and title.
func TestSessionReadRefusals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newHistoryFixture(t, s)
		c := f.conversation("Release prep")
		other := f.conversation("Other")
		f.turn(c, turnSpec{prompt: "hello", answer: "hi"})
		foreign, _ := f.turn(other, turnSpec{prompt: "elsewhere"})
		// A conversation of another workspace.
		ws2 := &store.Workspace{PublicID: f.id(), Handle: "second", Name: "Second", CreatedAt: baseMillis}
		f.write(func(tx *store.Tx) error { return store.InsertWorkspace(f.ctx, tx, ws2) })
		far := &store.Conversation{PublicID: f.id(), WorkspaceID: ws2.ID, AnsweringAgentID: f.agent.ID, CreatedByKind: store.KindUser,
			CreatedByPublicID: f.user.PublicID, Status: "active", CreatedAt: baseMillis, UpdatedAt: baseMillis}
		f.write(func(tx *store.Tx) error { return store.InsertConversation(f.ctx, tx, far) })
		stranger := &store.User{PublicID: f.id(), Handle: "zed", DisplayName: "Zed", CreatedAt: baseMillis}
		f.write(func(tx *store.Tx) error { return store.InsertUser(f.ctx, tx, stranger) })
		missing := "0190a5e2-0000-7000-8000-00000000ffff"
		id := c.PublicID
		agent := f.agentPrincipal()
		cases := []struct {
			in        string
			principal runs.Member
			word      string
			detail    string
		}{
			{`{"session_id":"` + id + `","turn":1,"cursor":2}`, agent, "invalid_arguments",
				"cursor is not a parameter; the parameters are session_id, around_turn_id, after_position, before_position, limit, include_execution."},
			{`{}`, agent, "invalid_arguments", "session_id is required."},
			{`{"session_id":null}`, agent, "invalid_arguments", "session_id is required."},
			{`{"session_id":7}`, agent, "invalid_arguments", "session_id must be a UUID."},
			{`{"session_id":"Release prep"}`, agent, "invalid_arguments", "session_id must be a UUID."},
			{`{"session_id":"` + id + `","around_turn_id":"r1"}`, agent, "invalid_arguments", "around_turn_id must be a UUID."},
			{`{"session_id":"` + id + `","after_position":-1}`, agent, "invalid_arguments", "after_position must be an integer of at least 0."},
			{`{"session_id":"` + id + `","after_position":"3"}`, agent, "invalid_arguments", "after_position must be an integer of at least 0."},
			{`{"session_id":"` + id + `","before_position":1.5}`, agent, "invalid_arguments", "before_position must be an integer of at least 0."},
			{`{"session_id":"` + id + `","limit":0}`, agent, "invalid_arguments", "limit must be an integer from 1 to 50."},
			{`{"session_id":"` + id + `","limit":51}`, agent, "invalid_arguments", "limit must be an integer from 1 to 50."},
			{`{"session_id":"` + id + `","include_execution":"yes"}`, agent, "invalid_arguments", "include_execution must be true or false."},
			{`{"session_id":"` + id + `","before_position":2,"after_position":1}`, agent, "invalid_arguments",
				"use at most one of around_turn_id, before_position and after_position."},
			{`{"session_id":"` + id + `","around_turn_id":"` + foreign.PublicID + `","before_position":0}`, agent, "invalid_arguments",
				"use at most one of around_turn_id, before_position and after_position."},
			{`{"session_id":"` + missing + `"}`, agent, "unknown_conversation", "no conversation " + missing + " that you can read."},
			{`{"session_id":"` + far.PublicID + `"}`, agent, "unknown_conversation", "no conversation " + far.PublicID + " that you can read."},
			{`{"session_id":"` + id + `"}`, runs.Member{Kind: store.KindUser, PublicID: stranger.PublicID}, "unknown_conversation",
				"no conversation " + id + " that you can read."},
			{`{"session_id":"` + id + `","around_turn_id":"` + foreign.PublicID + `"}`, agent, "turn_not_found",
				"turn " + foreign.PublicID + " is not in the visible history of conversation " + id + "."},
			{`{"session_id":"` + id + `","around_turn_id":"` + missing + `"}`, agent, "turn_not_found",
				"turn " + missing + " is not in the visible history of conversation " + id + "."},
		}
		for _, tc := range cases {
			r := f.call("session_read", tc.in, tc.principal)
			want := tc.word + ": " + tc.detail
			sc := `{"error":{"key":"` + tc.word + `","detail":"` + tc.detail + `"}}`
			if r.Content != want || !r.IsError || r.Title != "session_read refused" || string(r.StructuredContent) != sc {
				t.Errorf("%s:\n got %q %q %s\nwant %q", tc.in, r.Content, r.Title, r.StructuredContent, want)
			}
		}
		// An agent removed from the workspace reads nothing any more: access is current.
		f.write(func(tx *store.Tx) error {
			_, err := tx.Exec(f.ctx, `UPDATE agents SET removed_at = ? WHERE id = ?`, baseMillis, f.agent.ID)
			return err
		})
		if r := f.call("session_read", `{"session_id":"`+id+`"}`, agent); r.Content != "unknown_conversation: no conversation "+id+" that you can read." {
			t.Errorf("removed agent: %q", r.Content)
		}
	})
}

// TestSessionReadWindows pins the windows (docs/agent-tools.md#delegation-and-conversations): the
// newest turns without a cursor, before and after a position, around a turn with the newer
// neighbour winning a tie, ascending order, the pagination cursors and has_older/has_newer, empty
// pages, archived and child conversations readable, and the exact bytes of one page.
func TestSessionReadWindows(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newHistoryFixture(t, s)
		c := f.conversation("Release prep")
		var ids []string
		for i := 1; i <= 7; i++ {
			tu, _ := f.turn(c, turnSpec{prompt: fmt.Sprintf("q%d", i), answer: fmt.Sprintf("a%d", i)})
			ids = append(ids, tu.PublicID)
		}
		id := c.PublicID
		cases := []struct {
			in                 string
			positions          []int64
			hasOlder, hasNewer bool
		}{
			{`{"session_id":"` + id + `","limit":3}`, []int64{5, 6, 7}, true, false},
			{`{"session_id":"` + id + `"}`, []int64{1, 2, 3, 4, 5, 6, 7}, false, false},
			{`{"session_id":"` + strings.ToUpper(id) + `","limit":3,"around_turn_id":null}`, []int64{5, 6, 7}, true, false},
			{`{"session_id":"` + id + `","limit":3,"before_position":5}`, []int64{2, 3, 4}, true, true},
			{`{"session_id":"` + id + `","limit":3,"before_position":3}`, []int64{1, 2}, false, true},
			{`{"session_id":"` + id + `","limit":3,"after_position":5}`, []int64{6, 7}, true, false},
			{`{"session_id":"` + id + `","limit":3,"after_position":0}`, []int64{1, 2, 3}, false, true},
			{`{"session_id":"` + id + `","limit":3,"around_turn_id":"` + ids[3] + `"}`, []int64{3, 4, 5}, true, true},
			{`{"session_id":"` + id + `","limit":2,"around_turn_id":"` + ids[3] + `"}`, []int64{4, 5}, true, true},
			{`{"session_id":"` + id + `","limit":4,"around_turn_id":"` + ids[3] + `"}`, []int64{3, 4, 5, 6}, true, true},
			{`{"session_id":"` + id + `","limit":1,"around_turn_id":"` + ids[3] + `"}`, []int64{4}, true, true},
			{`{"session_id":"` + id + `","limit":3,"around_turn_id":"` + ids[6] + `"}`, []int64{5, 6, 7}, true, false},
			{`{"session_id":"` + id + `","limit":4,"around_turn_id":"` + strings.ToUpper(ids[0]) + `"}`, []int64{1, 2, 3, 4}, false, true},
			{`{"session_id":"` + id + `","before_position":1}`, []int64{}, false, true},
			{`{"session_id":"` + id + `","before_position":0}`, []int64{}, false, true},
			{`{"session_id":"` + id + `","after_position":7}`, []int64{}, true, false},
			{`{"session_id":"` + id + `","after_position":99}`, []int64{}, true, false},
		}
		for _, tc := range cases {
			p := f.read(tc.in)
			if diff := cmp.Diff(tc.positions, p.positions()); diff != "" {
				t.Errorf("%s: positions (-want +got)\n%s", tc.in, diff)
			}
			if p.Pagination.HasOlder != tc.hasOlder || p.Pagination.HasNewer != tc.hasNewer {
				t.Errorf("%s: has_older %v has_newer %v", tc.in, p.Pagination.HasOlder, p.Pagination.HasNewer)
			}
			if len(tc.positions) == 0 {
				if p.Pagination.BeforePosition != nil || p.Pagination.AfterPosition != nil {
					t.Errorf("%s: cursors %+v on an empty page", tc.in, p.Pagination)
				}
				continue
			}
			if *p.Pagination.BeforePosition != tc.positions[0] || *p.Pagination.AfterPosition != tc.positions[len(tc.positions)-1] {
				t.Errorf("%s: cursors %d %d", tc.in, *p.Pagination.BeforePosition, *p.Pagination.AfterPosition)
			}
		}

		// The bytes of one page: keys in order, created_at in seconds, title as given.
		r := f.call("session_read", `{"session_id":"`+id+`","limit":1,"before_position":2}`, f.agentPrincipal())
		want := `{"conversation":{"public_id":"` + id + `","title":"Release prep"},"turns":[{"public_id":"` + ids[0] +
			`","position":1,"kind":"message","role":"user","created_at":"2030-01-15T09:00:00Z","in_progress":false,"truncated":false,` +
			`"prompt":"q1","content":"a1"}],"pagination":{"before_position":1,"after_position":1,"has_older":false,"has_newer":true},"truncated":false}`
		if r.Content != want || r.Title != "read conversation "+id || r.IsError {
			t.Errorf("page:\n got %s %q\nwant %s", r.Content, r.Title, want)
		}

		// An empty conversation, untitled, archived: readable, with null cursors.
		empty := f.conversation("")
		f.archive(empty)
		r = f.call("session_read", `{"session_id":"`+empty.PublicID+`"}`, f.agentPrincipal())
		want = `{"conversation":{"public_id":"` + empty.PublicID + `","title":null},"turns":[],"pagination":{"before_position":null,"after_position":null,"has_older":false,"has_newer":false},"truncated":false}`
		if r.Content != want {
			t.Errorf("empty:\n got %s\nwant %s", r.Content, want)
		}
		// A child conversation reads like any other; a kernel delivery's role is kernel.
		kid := f.child(c, "research")
		f.turn(kid, turnSpec{prompt: "<task_result>", answer: "noted", author: "kernel"})
		if r := f.call("session_read", `{"session_id":"`+kid.PublicID+`"}`, f.agentPrincipal()); !strings.Contains(r.Content, `"role":"kernel"`) {
			t.Errorf("child: %s", r.Content)
		}
	})
}

// TestSessionReadBudget pins the text budget (docs/agent-tools.md#delegation-and-conversations):
// 12,000 code points per page spent from the window's near edge, each field cut to min(2000,
// remaining), fields past the budget omitted, truncated on the turn and the page.
func TestSessionReadBudget(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newHistoryFixture(t, s)
		c := f.conversation("Long")
		long := strings.Repeat("é", 2500) // two bytes a character: the budget counts code points
		var ids []string
		for i := 0; i < 5; i++ {
			tu, _ := f.turn(c, turnSpec{prompt: long, answer: long})
			ids = append(ids, tu.PublicID)
		}
		cut := strings.Repeat("é", 2000)
		type field struct {
			prompt, content *string
			truncated       bool
		}
		check := func(name string, p readPage, want map[int64]field) {
			t.Helper()
			for _, tu := range p.Turns {
				w := want[tu.Position]
				if !cmp.Equal(w.prompt, tu.Prompt) || !cmp.Equal(w.content, tu.Content) || w.truncated != tu.Truncated {
					t.Errorf("%s turn %d: prompt %d content %d truncated %v", name, tu.Position, runeLen(tu.Prompt), runeLen(tu.Content), tu.Truncated)
				}
			}
			if !p.Truncated {
				t.Errorf("%s: the page is not truncated", name)
			}
		}
		// Newest first: turns 5, 4, 3 spend 2000+2000 each; 2 and 1 get nothing.
		check("newest", f.read(`{"session_id":"`+c.PublicID+`"}`), map[int64]field{
			5: {&cut, &cut, true}, 4: {&cut, &cut, true}, 3: {&cut, &cut, true}, 2: {nil, nil, true}, 1: {nil, nil, true}})
		// Oldest first after a position.
		check("after", f.read(`{"session_id":"`+c.PublicID+`","after_position":0}`), map[int64]field{
			1: {&cut, &cut, true}, 2: {&cut, &cut, true}, 3: {&cut, &cut, true}, 4: {nil, nil, true}, 5: {nil, nil, true}})
		// Around turn 2: the target, then 3 (newer wins), then 1; 4 and 5 get nothing.
		check("around", f.read(`{"session_id":"`+c.PublicID+`","around_turn_id":"`+ids[1]+`"}`), map[int64]field{
			2: {&cut, &cut, true}, 3: {&cut, &cut, true}, 1: {&cut, &cut, true}, 4: {nil, nil, true}, 5: {nil, nil, true}})

		// A short field is whole; a field cut by the budget's remainder, not by the per-field cap.
		d := f.conversation("Mixed")
		short := "short"
		f.turn(d, turnSpec{prompt: strings.Repeat("x", 1500), answer: short})
		for i := 0; i < 5; i++ {
			f.turn(d, turnSpec{prompt: strings.Repeat("y", 2000), answer: ""})
		}
		p := f.read(`{"session_id":"` + d.PublicID + `"}`)
		// Turns 6..2 spend 5 × 2000 = 10000; turn 1's prompt (1500) fits whole in the remaining
		// 2000, and its content takes 5 of the last 500.
		first := p.Turns[0]
		if runeLen(first.Prompt) != 1500 || first.Content == nil || *first.Content != short || first.Truncated || p.Truncated {
			t.Errorf("mixed: prompt %d content %v truncated %v page %v", runeLen(first.Prompt), first.Content, first.Truncated, p.Truncated)
		}
		f.turn(d, turnSpec{prompt: strings.Repeat("z", 1000), answer: ""})
		p = f.read(`{"session_id":"` + d.PublicID + `"}`)
		// Now 7 (1000) and 6..3 (8000) leave 3000: turn 2 whole (2000), turn 1's prompt cut to
		// 1000 and its content omitted.
		first = p.Turns[0]
		if runeLen(first.Prompt) != 1000 || first.Content != nil || !first.Truncated || !p.Truncated || p.Turns[1].Truncated {
			t.Errorf("remainder: prompt %d content %v truncated %v page %v", runeLen(first.Prompt), first.Content, first.Truncated, p.Truncated)
		}
	})
}

func runeLen(s *string) int {
	if s == nil {
		return -1
	}
	return len([]rune(*s))
}

// TestSessionReadExecution pins include_execution
// (docs/agent-tools.md#delegation-and-conversations): the run's status and its tasks that are not
// hidden, in creation order, at most 32, with tool_name and title only when the task has them and
// tasks_omitted counting the rest; unfinished turns are included, with the response committed so
// far.
func TestSessionReadExecution(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newHistoryFixture(t, s)
		c := f.conversation("Work")
		done, doneRun := f.turn(c, turnSpec{prompt: "read go.mod", answer: "It needs Go 1.22."})
		f.task(doneRun, taskSpec{key: "r1", kind: "model_task", status: "completed", visibility: "visible", mainline: true, output: "Reading."})
		f.task(doneRun, taskSpec{key: "r1t0", kind: "tool_task", status: "completed", visibility: "collapsed", toolName: "read_file", title: "read go.mod"})
		f.task(doneRun, taskSpec{key: "r1t1", kind: "tool_task", status: "completed", visibility: "collapsed", toolName: "wait"})
		f.task(doneRun, taskSpec{key: "r1t1-wait-1", kind: "await", status: "completed", visibility: "hidden"})
		f.task(doneRun, taskSpec{key: "r2", kind: "model_task", status: "completed", visibility: "visible", mainline: true, output: "It needs Go 1.22."})
		live, liveRun := f.turn(c, turnSpec{prompt: "now build it", status: "running"})
		f.task(liveRun, taskSpec{key: "r1", kind: "model_task", status: "completed", visibility: "visible", mainline: true, output: "Building first."})
		f.task(liveRun, taskSpec{key: "r1-model-1", kind: "model_task", status: "completed", visibility: "hidden", output: "branch text, never shown"})
		f.task(liveRun, taskSpec{key: "r2", kind: "model_task", status: "running", visibility: "visible", mainline: true})
		for i := 0; i < 40; i++ {
			f.task(liveRun, taskSpec{key: fmt.Sprintf("r1t%d", i), kind: "tool_task", status: "completed", visibility: "collapsed", toolName: "build"})
		}
		for i := 0; i < 3; i++ {
			f.task(liveRun, taskSpec{key: fmt.Sprintf("r1t%d-wait-1", i), kind: "await", status: "running", visibility: "hidden"})
		}
		queued, _ := f.turn(c, turnSpec{prompt: "and then deploy", status: "queued"})
		failed, _ := f.turn(c, turnSpec{prompt: "", status: "failed"})

		r := f.call("session_read", `{"session_id":"`+c.PublicID+`","limit":1,"before_position":2,"include_execution":true}`, f.agentPrincipal())
		want := `{"conversation":{"public_id":"` + c.PublicID + `","title":"Work"},"turns":[{"public_id":"` + done.PublicID +
			`","position":1,"kind":"message","role":"user","created_at":"2030-01-15T09:00:00Z","in_progress":false,"truncated":false,` +
			`"prompt":"read go.mod","content":"It needs Go 1.22.","execution":{"run_public_id":"` + doneRun.PublicID + `","status":"completed","tasks":[` +
			`{"key":"r1","kind":"model_task","status":"completed"},{"key":"r1t0","kind":"tool_task","status":"completed","tool_name":"read_file","title":"read go.mod"},` +
			`{"key":"r1t1","kind":"tool_task","status":"completed","tool_name":"wait"},{"key":"r2","kind":"model_task","status":"completed"}],"tasks_omitted":0}}],` +
			`"pagination":{"before_position":1,"after_position":1,"has_older":false,"has_newer":true},"truncated":false}`
		if r.Content != want {
			t.Errorf("execution:\n got %s\nwant %s", r.Content, want)
		}

		p := f.read(`{"session_id":"` + c.PublicID + `","include_execution":true}`)
		byID := map[string]int{}
		for i, tu := range p.Turns {
			byID[tu.PublicID] = i
		}
		lt := p.Turns[byID[live.PublicID]]
		if !lt.InProgress || lt.Content == nil || *lt.Content != "Building first." || *lt.Prompt != "now build it" {
			t.Errorf("live turn: %+v", lt)
		}
		var ex struct {
			Status string `json:"status"`
			Tasks  []struct {
				Key string `json:"key"`
			} `json:"tasks"`
			TasksOmitted int64 `json:"tasks_omitted"`
		}
		if err := json.Unmarshal(lt.Execution, &ex); err != nil {
			t.Fatal(err)
		}
		// 42 visible tasks: r1, r2 and 40 tool calls; 32 listed, 10 omitted, the hidden ones in neither.
		if ex.Status != "running" || len(ex.Tasks) != 32 || ex.TasksOmitted != 10 || ex.Tasks[0].Key != "r1" || ex.Tasks[1].Key != "r2" || ex.Tasks[31].Key != "r1t29" {
			t.Errorf("live execution: %s", lt.Execution)
		}
		qt := p.Turns[byID[queued.PublicID]]
		if !qt.InProgress || qt.Content != nil || *qt.Prompt != "and then deploy" {
			t.Errorf("queued turn: %+v", qt)
		}
		ft := p.Turns[byID[failed.PublicID]]
		if ft.InProgress || ft.Content != nil || ft.Prompt != nil {
			t.Errorf("failed turn: %+v", ft)
		}
		// Without include_execution no turn carries the block.
		for _, tu := range f.read(`{"session_id":"` + c.PublicID + `"}`).Turns {
			if tu.Execution != nil {
				t.Errorf("execution without asking: %s", tu.Execution)
			}
		}
	})
}
