package httpapi

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// Text the store cannot keep (U+0000, a lone surrogate, bytes that are not UTF-8) is refused 422
// validation_failed at its field's path by every door, on both stores: PostgreSQL answered it
// 500, SQLite kept it and sent it to the model.
func TestUnstorableTextRefusedAtItsPath(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newRunsFixture(t, s)
		agentID, _ := f.newAgent(t, f.admin, "default", "helper")
		conv := obj(t, f.must(t, 201, "POST", convBase, f.admin, `{"conversation":{"answering_agent_public_id":"`+agentID+`"}}`), "conversation")
		messages := convBase + "/" + conv["public_id"].(string) + "/messages"
		for _, c := range []struct {
			name, method, url, body, path string
		}{
			{"a prompt with U+0000", "POST", runsBase, `{"run":{"approval_mode":"bypass","steps":[{"model":{"model":"mock/scripted","prompt":"a\u0000b"}}]}}`, "run.steps[0].model.prompt"},
			{"instructions with a lone surrogate", "POST", runsBase, `{"run":{"approval_mode":"bypass","steps":[{"model":{"model":"mock/scripted","prompt":"x","instructions":"\ud800"}}]}}`, "run.steps[0].model.instructions"},
			{"a prompt with bytes that are not UTF-8", "POST", runsBase, "{\"run\":{\"approval_mode\":\"bypass\",\"steps\":[{\"model\":{\"model\":\"mock/scripted\",\"prompt\":\"\xff\xfe\"}}]}}", "run.steps[0].model.prompt"},
			{"a conversation title with U+0000", "POST", convBase, `{"conversation":{"answering_agent_public_id":"` + agentID + `","title":"a\u0000"}}`, "conversation.title"},
			{"a message with U+0000", "POST", messages, `{"message":{"text":"\u0000"}}`, "message.text"},
			{"a workspace name with U+0000", "POST", "/agent_api/v1/workspaces", `{"workspace":{"handle":"nul","name":"N\u0000"}}`, "workspace.name"},
			{"a token label with U+0000", "POST", "/agent_api/v1/tokens", `{"token":{"label":"\u0000"}}`, "token.label"},
		} {
			f.refused(t, 422, "validation_failed", c.path, c.method, c.url, f.admin, c.body)
		}
		// Nothing was written: the listings hold only what the test made.
		if got := list(t, f.must(t, 200, "GET", runsBase, f.admin, nil), "runs"); len(got) != 0 {
			t.Fatalf("a refused create left %d runs", len(got))
		}
	})
}

// A key or an id that cannot exist names nothing: 404 at every path parameter, 422 in a body's
// id field, without a statement that could fail on PostgreSQL (which answered 500, or wedged
// the connection on a 30,000-character id).
func TestMalformedKeysAndIDsNameNothing(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newRunsFixture(t, s)
		run := obj(t, f.must(t, 201, "POST", runsBase, f.admin, scriptRun("!mock\nround 1\nsay hi", "")), "run")
		id := run["public_id"].(string)
		long := strings.Repeat("a", 30_000)
		for _, url := range []string{
			runsBase + "/" + id + "/tasks/%ff%fe",
			runsBase + "/" + id + "/tasks/%00",
			runsBase + "/" + id + "/tasks/" + long,
			runsBase + "/" + id + "/tasks/%ff%fe/request",
			runsBase + "/" + long,
			runsBase + "/" + long + "/tasks/s1-model-1",
			runsBase + "/%00",
			convBase + "/" + long,
			convBase + "/%ff/history",
		} {
			f.refused(t, 404, "not_found", "", "GET", url, f.admin, nil)
		}
		for _, url := range []string{runsBase + "/" + id + "/tasks/%ff%fe/approve", runsBase + "/" + id + "/tasks/%00/cancel"} {
			f.refused(t, 404, "not_found", "", "POST", url, f.admin, nil)
		}
		f.refused(t, 422, "validation_failed", "conversation.answering_agent_public_id", "POST", convBase, f.admin,
			`{"conversation":{"answering_agent_public_id":"`+long+`"}}`)
		// A listing filtered by a conversation that cannot exist lists nothing.
		if got := list(t, f.must(t, 200, "GET", runsBase+"?conversation_public_id="+long, f.admin, nil), "runs"); len(got) != 0 {
			t.Fatalf("runs of a malformed conversation: %v", got)
		}
		// The server still answers, on the same store.
		f.must(t, 200, "GET", runsBase+"/"+id, f.admin, nil)
	})
}

// The runs listing refuses a status it does not know, as the other listings do.
func TestRunListingStatusWord(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, storetest.Open(t, store.SQLite))
	f.refused(t, 400, "parameter_invalid", "status", "GET", runsBase+"?status=zzz", f.admin, nil)
	f.must(t, 200, "GET", runsBase+"?status=needs_attention", f.admin, nil)
}

// A client that stops waiting is no server fault: the door's error (a statement or a wait cut
// short by the request's context) is not answered 500 nor logged as an error; the request log
// says 499 at debug.
func TestClientGoneIsNoFault(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, storetest.Open(t, store.SQLite))
	var logs bytes.Buffer
	f.api.deps.Log = hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Debug})
	run := obj(t, f.must(t, 201, "POST", runsBase, f.admin, scriptRun("!mock\nround 1\nsay hi", "")), "run")
	logs.Reset()
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequest("GET", runsBase+"/"+run["public_id"].(string)+"?wait=30", nil).WithContext(ctx)
	req.Header.Set("Authorization", "Bearer "+f.admin)
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.api.ServeHTTP(rec, req)
	}()
	cancel() // the client goes away while the read waits, or before it begins
	<-done
	if rec.Code == 500 || rec.Body.Len() != 0 {
		t.Fatalf("a client that left was answered %d %q", rec.Code, rec.Body.String())
	}
	if got := logs.String(); strings.Contains(got, "[ERROR]") || !strings.Contains(got, "[DEBUG] request:") || !strings.Contains(got, "status=499") {
		t.Fatalf("a client that left was logged %q", got)
	}
}

// A name that holds a bidirectional control can display as another name (docs/api.md, "Names
// that cannot spoof"): display names, workspace names, executor names, token labels and
// conversation titles refuse one, 422 validation_failed at its path, and keep the joiner of
// emoji (U+200D).
func TestNamesRefuseBidiControls(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, storetest.Open(t, store.SQLite))
	agentID, _ := f.newAgent(t, f.admin, "default", "helper")
	for _, c := range []struct{ url, body, path string }{
		{"/agent_api/v1/workspaces", `{"workspace":{"handle":"spoof","name":"invoice\u202etxt.exe"}}`, "workspace.name"},
		{"/agent_api/v1/workspaces/default/users", `{"user":{"handle":"li","display_name":"Li\u2066","role":"member"}}`, "user.display_name"},
		{"/agent_api/v1/workspaces/default/agents", `{"agent":{"handle":"bot2","display_name":"\u200fbot"}}`, "agent.display_name"},
		{"/agent_api/v1/executors", `{"executor":{"kind":"runner","display_name":"run\u061cner"}}`, "executor.display_name"},
		{"/agent_api/v1/tokens", `{"token":{"label":"laptop\u202a"}}`, "token.label"},
		{convBase, `{"conversation":{"answering_agent_public_id":"` + agentID + `","title":"Release\u202e"}}`, "conversation.title"},
	} {
		f.refused(t, 422, "validation_failed", c.path, "POST", c.url, f.admin, c.body)
	}
	f.must(t, 201, "POST", "/agent_api/v1/tokens", f.admin, `{"token":{"label":"family 👨\u200d👩\u200d👧"}}`)
	f.must(t, 201, "POST", convBase, f.admin, `{"conversation":{"answering_agent_public_id":"`+agentID+`","title":"👨\u200d👩\u200d👧"}}`)
}
