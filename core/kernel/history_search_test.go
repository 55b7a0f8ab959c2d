package kernel_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/kernel"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// TestSessionSearchRefusals pins session_search's argument sentences
// (docs/agent-tools.md#delegation-and-conversations) in parameter order, and the cursor refusal for
// anything no page issued.
func TestSessionSearchRefusals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newHistoryFixture(t, s)
		b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
		a, b := "0190a5e2-0000-7000-8000-0000000000d7", "0190a5e2-0000-7000-8000-0000000000c1"
		cursor := "after is not a cursor from a previous page."
		cases := []struct{ in, detail string }{
			{`{"query":"x","sort":"new","page":2}`, "page is not a parameter; the parameters are query, archived, include_auxiliary, limit, after."},
			{`{}`, "query is required."},
			{`{"query":null}`, "query is required."},
			{`{"query":5}`, "query must be a string."},
			{`{"query":" \n\t"}`, "query is empty."},
			{`{"query":"` + strings.Repeat("é", 513) + `"}`, "query must be at most 1024 bytes."},
			{`{"query":"x","archived":"all"}`, "archived must be one of exclude, include, only."},
			{`{"query":"x","include_auxiliary":"no"}`, "include_auxiliary must be true or false."},
			{`{"query":"x","limit":0}`, "limit must be an integer from 1 to 50."},
			{`{"query":"x","limit":51}`, "limit must be an integer from 1 to 50."},
			{`{"query":"x","limit":"5"}`, "limit must be an integer from 1 to 50."},
			{`{"query":"x","after":5}`, "after must be a string."},
			{`{"query":"x","after":"not base64!"}`, cursor},
			{`{"query":"x","after":""}`, cursor},
			{`{"query":"x","after":"` + b64(`["`+a+`","`+b+`"]`) + `"}`, cursor},
			{`{"query":"x","after":"` + b64(`{"primary":"`+a+`"}`) + `"}`, cursor},
			{`{"query":"x","after":"` + b64(`["`+a+`","`+b+`","body"]`) + `"}`, cursor},
			{`{"query":"x","after":"` + b64(`["`+a+`","`+b+`","title"]`) + `"}`, cursor},
			{`{"query":"x","after":"` + b64(`["`+b+`","`+b+`","content"]`) + `"}`, cursor},
			{`{"query":"x","after":"` + b64(`["`+strings.ToUpper(a)+`","`+b+`","content"]`) + `"}`, cursor},
			{`{"query":"x","after":"` + b64(`["r1","`+b+`","content"]`) + `"}`, cursor},
			{`{"query":"x","after":"` + base64.URLEncoding.EncodeToString([]byte(`["`+a+`","`+b+`","content"]`)) + `"}`, cursor},
		}
		for _, tc := range cases {
			r := f.call("session_search", tc.in, f.agentPrincipal())
			sc := `{"error":{"key":"invalid_arguments","detail":"` + tc.detail + `"}}`
			if r.Content != "invalid_arguments: "+tc.detail || !r.IsError || r.Title != "session_search refused" || string(r.StructuredContent) != sc {
				t.Errorf("%.80s:\n got %q %q\nwant %q", tc.in, r.Content, r.Title, tc.detail)
			}
		}
		// A well-formed cursor of the right shape is accepted (it names no hit, and finds none).
		ok := f.search(`{"query":"x","after":"` + b64(`["`+a+`","`+b+`","content"]`) + `"}`)
		if len(ok.Matches) != 0 || ok.Pagination.NextAfter != nil {
			t.Errorf("valid cursor: %+v", ok)
		}
	})
}

// TestSessionSearchMatching pins matching, order and excerpts
// (docs/agent-tools.md#delegation-and-conversations): all terms in one field (never across fields),
// rune-by-rune case folding, titles searched, hits ordered by descending turn (or conversation, for
// a title) id then field name, the excerpt window formula in code points, and the exact bytes of a
// page.
func TestSessionSearchMatching(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newHistoryFixture(t, s)
		c := f.conversation("Release prep")
		t1, _ := f.turn(c, turnSpec{prompt: "Can we SHIP on Friday?", answer: "Only if the migration lands; ship friday after."})
		f.turn(c, turnSpec{prompt: "ship it", answer: "on friday"}) // the terms are in two fields: no hit
		greek := f.conversation("ΣΟΦΊΑ notes")
		t3, _ := f.turn(greek, turnSpec{prompt: "Ask σοφία about ship dates", answer: "Friday."})

		p := f.search(`{"query":"  friday\tSHIP "}`)
		type hit struct {
			turn  string
			field string
		}
		var got []hit
		for _, m := range p.Matches {
			got = append(got, hit{deref(m.TurnPublicID), m.Field})
		}
		// Newest turn first; within a turn, fields by name.
		want := []hit{{t1.PublicID, "content"}, {t1.PublicID, "prompt"}}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(hit{})); diff != "" {
			t.Errorf("hits (-want +got)\n%s", diff)
		}
		// Case folding by rune: Σ folds to σ, so the title and the prompt both match; the
		// title hit sorts by its conversation's id, which is older than its turn.
		p = f.search(`{"query":"Σοφία"}`)
		if len(p.Matches) != 2 || deref(p.Matches[0].TurnPublicID) != t3.PublicID || p.Matches[0].Field != "prompt" ||
			p.Matches[1].Field != "title" || p.Matches[1].TurnPublicID != nil || p.Matches[1].Position != nil || p.Matches[1].ConversationPublicID != greek.PublicID {
			t.Errorf("greek: %+v", p.Matches)
		}
		// The bytes of a page.
		r := f.call("session_search", `{"query":"migration"}`, f.agentPrincipal())
		wantJSON := `{"matches":[{"conversation_public_id":"` + c.PublicID + `","title":"Release prep","turn_public_id":"` + t1.PublicID +
			`","variant_public_id":null,"position":1,"field":"content","inherited":false,"excerpt":"Only if the migration lands; ship friday after.","truncated":false}],` +
			`"pagination":{"next_after":null}}`
		if r.Content != wantJSON || r.Title != "searched history" {
			t.Errorf("page:\n got %s\nwant %s", r.Content, wantJSON)
		}
		r = f.call("session_search", `{"query":"notes ΣΟΦΊΑ"}`, f.agentPrincipal())
		wantJSON = `{"matches":[{"conversation_public_id":"` + greek.PublicID + `","title":"ΣΟΦΊΑ notes","turn_public_id":null,` +
			`"variant_public_id":null,"position":null,"field":"title","inherited":false,"excerpt":"ΣΟΦΊΑ notes","truncated":false}],"pagination":{"next_after":null}}`
		if r.Content != wantJSON {
			t.Errorf("title page:\n got %s\nwant %s", r.Content, wantJSON)
		}

		// Excerpts: n = 1000 code points (multi-byte before the term), p the earliest
		// occurrence of any term, the window at max(0, min(p-100, n-500)).
		ex := f.conversation("")
		field := func(at int, term string) string {
			return strings.Repeat("ä", at) + term + strings.Repeat("ö", 1000-at-len(term))
		}
		cases := []struct {
			text   string
			query  string
			start  int
			whole  bool
			length int
		}{
			{field(50, "needle"), "needle", 0, false, 500},
			{field(300, "needle"), "needle", 200, false, 500},
			{field(950, "needle"), "needle", 500, false, 500},
			{strings.Repeat("ä", 300) + "needle" + strings.Repeat("ö", 300) + "pin" + strings.Repeat("ö", 391), "pin needle", 200, false, 500},
			{strings.Repeat("ä", 494) + "needle", "NEEDLE", 0, true, 500},
		}
		for i, tc := range cases {
			tu, _ := f.turn(ex, turnSpec{prompt: tc.text})
			p := f.search(`{"query":"` + tc.query + `","limit":1}`)
			if len(p.Matches) != 1 || deref(p.Matches[0].TurnPublicID) != tu.PublicID {
				t.Fatalf("excerpt %d: %+v", i, p.Matches)
			}
			m := p.Matches[0]
			runes := []rune(tc.text)
			wantEx := string(runes[tc.start : tc.start+tc.length])
			if m.Excerpt != wantEx || m.Truncated == tc.whole || m.Title != nil {
				t.Errorf("excerpt %d: start %d, truncated %v", i, strings.Index(tc.text, m.Excerpt), m.Truncated)
			}
		}
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestSessionSearchScope pins the scope (docs/agent-tools.md#delegation-and-conversations):
// archived excluded, included or alone; child conversations only with include_auxiliary; other
// workspaces never; a principal without access finds nothing; unfinished turns searched with the
// response committed so far.
func TestSessionSearchScope(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newHistoryFixture(t, s)
		live := f.conversation("Live plan")
		old := f.conversation("Old plan")
		f.archive(old)
		kid := f.child(live, "research plan")
		kidTurn, _ := f.turn(kid, turnSpec{prompt: "dig into the plan"})
		running, runningRun := f.turn(live, turnSpec{prompt: "go", status: "running"})
		f.task(runningRun, taskSpec{key: "r1", kind: "model_task", status: "completed", visibility: "visible", mainline: true, output: "first plan step done"})
		ws2 := &store.Workspace{PublicID: f.id(), Handle: "second", Name: "Second", CreatedAt: baseMillis}
		f.write(func(tx *store.Tx) error { return store.InsertWorkspace(f.ctx, tx, ws2) })
		far := &store.Conversation{PublicID: f.id(), WorkspaceID: ws2.ID, AnsweringAgentID: f.agent.ID, CreatedByKind: store.KindUser,
			CreatedByPublicID: f.user.PublicID, Status: "active", Title: ptrTo("Far plan"), CreatedAt: baseMillis, UpdatedAt: baseMillis}
		f.write(func(tx *store.Tx) error { return store.InsertConversation(f.ctx, tx, far) })

		type hit struct{ conv, turn, field string }
		hits := func(in string) []hit {
			out := []hit{}
			for _, m := range f.search(in).Matches {
				out = append(out, hit{m.ConversationPublicID, deref(m.TurnPublicID), m.Field})
			}
			return out
		}
		cases := []struct {
			in   string
			want []hit
		}{
			{`{"query":"plan"}`, []hit{{live.PublicID, running.PublicID, "content"}, {live.PublicID, "", "title"}}},
			{`{"query":"plan","archived":"include"}`, []hit{{live.PublicID, running.PublicID, "content"}, {old.PublicID, "", "title"}, {live.PublicID, "", "title"}}},
			{`{"query":"plan","archived":"only"}`, []hit{{old.PublicID, "", "title"}}},
			{`{"query":"plan","include_auxiliary":true}`, []hit{{live.PublicID, running.PublicID, "content"}, {kid.PublicID, kidTurn.PublicID, "prompt"},
				{kid.PublicID, "", "title"}, {live.PublicID, "", "title"}}},
			{`{"query":"plan","archived":"only","include_auxiliary":true}`, []hit{{old.PublicID, "", "title"}}},
		}
		for _, tc := range cases {
			if diff := cmp.Diff(tc.want, hits(tc.in), cmp.AllowUnexported(hit{})); diff != "" {
				t.Errorf("%s (-want +got)\n%s", tc.in, diff)
			}
		}
		// A principal outside the workspace reads nothing.
		stranger := &store.User{PublicID: f.id(), Handle: "zed", DisplayName: "Zed", CreatedAt: baseMillis}
		f.write(func(tx *store.Tx) error { return store.InsertUser(f.ctx, tx, stranger) })
		r := f.call("session_search", `{"query":"plan"}`, runs.Member{Kind: store.KindUser, PublicID: stranger.PublicID})
		if r.Content != `{"matches":[],"pagination":{"next_after":null}}` {
			t.Errorf("stranger: %s", r.Content)
		}
	})
}

func ptrTo(s string) *string { return &s }

// TestSessionSearchPaging pins the cursor (docs/agent-tools.md#delegation-and-conversations):
// next_after is the unpadded base64url of [primary, conversation, field] of the page's last hit,
// pages of one hit walk the same hits as one page, and the last page answers null.
func TestSessionSearchPaging(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newHistoryFixture(t, s)
		a := f.conversation("alpha deploy")
		f.turn(a, turnSpec{prompt: "deploy now", answer: "deploy done"})
		b := f.conversation("beta")
		f.turn(b, turnSpec{prompt: "no match here", answer: "deploy later"})
		last, _ := f.turn(a, turnSpec{prompt: "Deploy?", answer: "nothing"})
		all := f.search(`{"query":"deploy"}`)
		if len(all.Matches) != 5 || all.Pagination.NextAfter != nil {
			t.Fatalf("all: %+v", all)
		}
		first := f.search(`{"query":"deploy","limit":1}`)
		wantCursor := base64.RawURLEncoding.EncodeToString([]byte(`["` + last.PublicID + `","` + a.PublicID + `","prompt"]`))
		if first.Pagination.NextAfter == nil || *first.Pagination.NextAfter != wantCursor {
			t.Fatalf("cursor %v, want %s", first.Pagination.NextAfter, wantCursor)
		}
		if got := kernel.EncodeSearchCursor(conversations.SearchPosition{Primary: last.PublicID, Conversation: a.PublicID, Field: "prompt"}); got != wantCursor {
			t.Errorf("EncodeSearchCursor %s", got)
		}
		var walked []searchHit
		after := ""
		for i := 0; i < 10; i++ {
			in := `{"query":"deploy","limit":2}`
			if after != "" {
				in = `{"query":"deploy","limit":2,"after":"` + after + `"}`
			}
			p := f.search(in)
			walked = append(walked, p.Matches...)
			if p.Pagination.NextAfter == nil {
				break
			}
			after = *p.Pagination.NextAfter
		}
		if diff := cmp.Diff(all.Matches, walked); diff != "" {
			t.Errorf("paged walk (-one page +pages)\n%s", diff)
		}
	})
}

// TestSessionSearchScanBound pins the bounded scan: a call reads at most conversations.MaxSearchScan rows
// and, having found nothing, answers no hits with a cursor at the last row read; the next call
// continues there and finds the old hit.
func TestSessionSearchScanBound(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newHistoryFixture(t, s)
		c := f.conversation("")
		needle, _ := f.turn(c, turnSpec{prompt: "the needle"})
		f.write(func(tx *store.Tx) error {
			for i := 0; i < conversations.MaxSearchScan+10; i++ {
				if _, _, err := f.turnTx(tx, c, turnSpec{prompt: "hay"}); err != nil {
					return err
				}
			}
			return nil
		})
		p := f.search(`{"query":"needle"}`)
		if len(p.Matches) != 0 || p.Pagination.NextAfter == nil {
			t.Fatalf("first call: %+v", p)
		}
		p = f.search(`{"query":"needle","after":"` + *p.Pagination.NextAfter + `"}`)
		if len(p.Matches) != 1 || deref(p.Matches[0].TurnPublicID) != needle.PublicID || p.Pagination.NextAfter != nil {
			t.Fatalf("second call: %+v", p)
		}
	})
}
