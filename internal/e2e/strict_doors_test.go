package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// strictDoor is one JSON door of the table: a body it would take (or get as far as its body
// checks with), and where its fields live.
type strictDoor struct {
	method, path, token string
	// unknown is the door's body with one key it does not know, misspelt a body with one of its
	// keys in another case; path and misspeltPath are where the refusals point.
	unknown, misspelt     string
	unknownAt, misspeltAt string
	status                int
	code                  string
	word                  string
}

// TestEveryDoorRefusesWhatItDoesNotKnow is the exact-field rule over every JSON door of both
// planes: an unknown field, a field misspelt only by case and malformed JSON are each refused
// by name (the path, or the byte offset), and the store reads back exactly as before each
// refusal.
func TestEveryDoorRefusesWhatItDoesNotKnow(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := newPlane(t, d)
			admin := p.srv.AdminToken
			r := p.executor("runner", "laptop")
			tp := p.executor("tool_provider", "pool")
			// An hour of park budget: the table reads the store back after every request, and a
			// claim that expired while a loaded machine ran it would change what it reads.
			p.announce(r, tool("screenshot", 3600000))
			run := p.modelRun("mock/scripted", oneCall, []any{routed("screenshot", r.id)}, nil, "bypass", nil)
			p.inboxRow(r, run, "r2t0")
			tok := p.claim(r, run, "r2t0").Claim.ClaimToken
			_, _, b := p.raw("POST", "/agent_api/v1/workspaces/default/agents", admin, []byte(`{"agent":{"handle":"helper","display_name":"Helper"}}`), nil)
			var ag struct {
				Agent struct {
					PublicID string `json:"public_id"`
				} `json:"agent"`
				Token string `json:"token"`
			}
			if err := json.Unmarshal(b, &ag); err != nil || ag.Token == "" {
				t.Fatalf("agent: %s", b)
			}
			_, _, b = p.raw("POST", "/agent_api/v1/workspaces/default/conversations", admin, []byte(`{"conversation":{"answering_agent_public_id":"`+ag.Agent.PublicID+`"}}`), nil)
			var conv struct {
				Conversation struct {
					PublicID string `json:"public_id"`
				} `json:"conversation"`
			}
			if err := json.Unmarshal(b, &conv); err != nil || conv.Conversation.PublicID == "" {
				t.Fatalf("conversation: %s", b)
			}
			_, _, b = p.raw("GET", "/agent_api/v1/tokens", admin, nil, nil)
			var toks struct {
				Tokens []struct {
					PublicID string `json:"public_id"`
				} `json:"tokens"`
			}
			if err := json.Unmarshal(b, &toks); err != nil || len(toks.Tokens) == 0 {
				t.Fatalf("tokens: %s", b)
			}
			runs := "/agent_api/v1/workspaces/default/runs/" + run
			inbox := "/agent_api/v1/executor/inbox/" + run + "/r2t0"
			mem := "/agent_api/v1/workspaces/default/memory/"
			convs := "/agent_api/v1/workspaces/default/conversations/" + conv.Conversation.PublicID
			const pi, vf = "parameter_invalid", "validation_failed"
			none := func(method, path, token string) strictDoor {
				return strictDoor{method: method, path: path, token: token, unknown: `{"note":1}`, misspelt: `{"Note":1}`,
					unknownAt: "note", misspeltAt: "Note", status: 400, code: pi}
			}
			doors := []strictDoor{
				{"POST", "/agent_api/v1/workspaces", admin, `{"workspace":{"handle":"w2","name":"W","owner":"x"}}`, `{"workspace":{"Handle":"w2","name":"W"}}`, "workspace.owner", "workspace.Handle", 422, vf, ""},
				{"POST", "/agent_api/v1/workspaces/default/agents", admin, `{"agent":{"handle":"a2","display_name":"A","steward":"x"}}`, `{"agent":{"handle":"a2","Display_Name":"A"}}`, "agent.steward", "agent.Display_Name", 422, vf, ""},
				{"POST", "/agent_api/v1/workspaces/default/users", admin, `{"user":{"handle":"u2","display_name":"U","role":"member","email":"x"}}`, `{"user":{"handle":"u2","display_name":"U","Role":"member"}}`, "user.email", "user.Role", 422, vf, ""},
				{"POST", "/agent_api/v1/workspaces/default/members", admin, `{"member":{"user_public_id":"x","role":"member"},"notify":true}`, `{"Member":{"user_public_id":"x","role":"member"},"member":{"user_public_id":"x","role":"member"}}`, "notify", "Member", 422, vf, ""},
				{"POST", "/agent_api/v1/tokens", admin, `{"token":{"label":"ci","expires":"2030-01-01T00:00:00Z"}}`, `{"token":{"label":"ci","Expires_At":"2030-01-01T00:00:00Z"}}`, "token.expires", "token.Expires_At", 422, vf, ""},
				{"POST", "/agent_api/v1/executors", admin, `{"executor":{"kind":"runner","display_name":"x","workspace":"default"}}`, `{"executor":{"Kind":"runner","display_name":"x"}}`, "executor.workspace", "executor.Kind", 422, vf, ""},
				none("POST", "/agent_api/v1/executors/"+r.id+"/token", admin),
				none("DELETE", "/agent_api/v1/executors/"+tp.id, admin),
				none("DELETE", "/agent_api/v1/workspaces/default/members/"+ag.Agent.PublicID, admin),
				none("DELETE", "/agent_api/v1/tokens/"+toks.Tokens[0].PublicID, admin),
				none("DELETE", "/agent_api/v1/tokens/current", admin),
				{"PUT", "/agent_api/v1/workspaces/default/agent_messaging_policy", admin, `{"agent_messaging_policy":{"agents":{},"default":"private"},"expected_lock_version":0}`, `{"agent_messaging_policy":{"agents":{}},"Expected_Lock_Version":0}`, "agent_messaging_policy.default", "Expected_Lock_Version", 400, pi, ""},
				{"PUT", "/agent_api/v1/workspaces/default/tool_provider_overrides", admin, `{"tool_provider_overrides":{},"expected_lock_version":0,"force":true}`, `{"Tool_Provider_Overrides":{},"expected_lock_version":0}`, "force", "Tool_Provider_Overrides", 422, vf, ""},
				{"POST", mem + "write", admin, `{"memory":{"path":"workspace/a","content":"x","expected_public_id":null,"expected_lock_version":null,"mode":"append"}}`, `{"memory":{"Path":"workspace/a","content":"x","expected_public_id":null,"expected_lock_version":null}}`, "memory.mode", "memory.Path", 400, pi, ""},
				{"POST", mem + "show", admin, `{"memory":{"path":"workspace/a","offset":1}}`, `{"memory":{"Path":"workspace/a"}}`, "memory.offset", "memory.Path", 400, pi, ""},
				{"POST", mem + "edit", admin, `{"memory":{"path":"workspace/a","old_text":"x","new_text":"y","expected_public_id":"x","expected_lock_version":1,"all":true}}`, `{"memory":{"path":"workspace/a","Old_Text":"x","new_text":"y","expected_public_id":"x","expected_lock_version":1}}`, "memory.all", "memory.Old_Text", 400, pi, ""},
				{"POST", mem + "grep", admin, `{"memory":{"pattern":"x","regex":true}}`, `{"memory":{"Pattern":"x"}}`, "memory.regex", "memory.Pattern", 400, pi, ""},
				{"POST", mem + "delete", admin, `{"memory":{"path":"workspace/a","expected_public_id":"x","expected_lock_version":1},"recursive":true}`, `{"memory":{"path":"workspace/a","Expected_Public_Id":"x","expected_lock_version":1}}`, "recursive", "memory.Expected_Public_Id", 400, pi, ""},
				{"PUT", "/agent_api/v1/profile/configuration", ag.Token, `{"configuration":{"instructions":"x","temperature":1}}`, `{"configuration":{"Instructions":"x"}}`, "configuration.temperature", "configuration.Instructions", 422, vf, "invalid"},
				{"POST", "/agent_api/v1/tools/assembly", ag.Token, `{"default_runner_executor_public_id":null,"model":"x"}`, `{"Default_Runner_Executor_Public_Id":null}`, "model", "Default_Runner_Executor_Public_Id", 400, pi, ""},
				{"POST", "/agent_api/v1/workspaces/default/conversations", admin, `{"conversation":{"title":"t"},"agent":"x"}`, `{"conversation":{"Title":"t"}}`, "agent", "conversation.Title", 422, vf, ""},
				{"POST", convs + "/messages", admin, `{"message":{"text":"hi"},"steer":true}`, `{"message":{"Text":"hi"}}`, "steer", "message.Text", 422, vf, ""},
				none("POST", convs+"/archive", admin),
				{"POST", "/agent_api/v1/workspaces/default/runs", admin, `{"run":{"steps":[]},"start":true}`, `{"run":{"Steps":[]}}`, "start", "run.Steps", 422, vf, ""},
				none("POST", runs+"/start", admin),
				{"POST", runs + "/stop", admin, `{"force":true,"reason":"x"}`, `{"Force":true}`, "reason", "Force", 400, pi, ""},
				{"POST", runs + "/tasks", admin, `{"steps":[],"expected_revision":1,"start":true}`, `{"Steps":[]}`, "start", "Steps", 400, pi, ""},
				{"POST", runs + "/tasks/r2t0/resolution", admin, `{"content":"x","claim_token":"x"}`, `{"Content":"x"}`, "claim_token", "Content", 400, pi, ""},
				none("POST", runs+"/tasks/r2t0/approve", admin),
				{"POST", runs + "/tasks/r2t0/deny", admin, `{"reason":"x","force":true}`, `{"Reason":"x"}`, "force", "Reason", 400, pi, ""},
				none("POST", runs+"/tasks/r2t0/cancel", admin),
				none("POST", "/agent_api/v1/plugins/reload", admin),
				none("POST", "/agent_api/v1/plugins/nope/restart", admin),
				{"PUT", "/agent_api/v1/executor/announcement", r.token, `{"tools":[],"document":[]}`, `{"Tools":[]}`, "document", "Tools", 422, "invalid_announcement", ""},
				none("POST", inbox+"/claim", r.token),
				{"POST", inbox + "/extend", r.token, `{"claim_token":"` + tok + `","timeout_ms":1000,"reason":"x"}`, `{"Claim_Token":"` + tok + `","timeout_ms":1000}`, "reason", "Claim_Token", 400, pi, ""},
				{"POST", inbox + "/commit", r.token, `{"claim_token":"` + tok + `","content":"x","isError":true}`, `{"claim_token":"` + tok + `","Content":"x"}`, "isError", "Content", 400, pi, ""},
			}
			db := p.srv.Server().Store()
			for _, door := range doors {
				for _, c := range []struct {
					name, body, at string
				}{{"unknown", door.unknown, door.unknownAt}, {"misspelt", door.misspelt, door.misspeltAt}} {
					before := snapshot(t, db)
					status, _, b := p.raw(door.method, door.path, door.token, []byte(c.body), nil)
					var e struct {
						Error struct {
							Code, Message, Path, Word string
						} `json:"error"`
					}
					_ = json.Unmarshal(b, &e)
					if status != door.status || e.Error.Code != door.code || e.Error.Path != c.at || e.Error.Word != door.word {
						t.Errorf("%s %s, %s field: %d %s, want %d %s at %s", door.method, door.path, c.name, status, b, door.status, door.code, c.at)
					}
					if after := snapshot(t, db); !slices.Equal(before, after) {
						t.Errorf("%s %s, %s field: the store changed:\n%s", door.method, door.path, c.name, diffRows(before, after))
					}
				}
				before := snapshot(t, db)
				status, _, b := p.raw(door.method, door.path, door.token, []byte(`{"a": [1, 2,}`), nil)
				if status != 400 || errorCode(b) != "parameter_invalid" || !strings.Contains(string(b), "at byte 12.") {
					t.Errorf("%s %s, malformed JSON: %d %s", door.method, door.path, status, b)
				}
				if after := snapshot(t, db); !slices.Equal(before, after) {
					t.Errorf("%s %s, malformed JSON: the store changed:\n%s", door.method, door.path, diffRows(before, after))
				}
			}
		})
	}
}

// snapshot reads every row of every table of the store, as sorted text lines.
func snapshot(t *testing.T, s *store.Store) []string {
	t.Helper()
	ctx := context.Background()
	db := s.DB()
	q := `SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`
	if s.Dialect() == store.Postgres {
		q = `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`
	}
	tables, err := db.QueryContext(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for tables.Next() {
		var n string
		if err := tables.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	_ = tables.Close()
	var out []string
	for _, n := range names {
		if n == "instances" {
			continue // the heartbeat renews it on its own clock; no door writes it
		}
		out = append(out, tableRows(t, db, n)...)
	}
	slices.Sort(out)
	return out
}

func tableRows(t *testing.T, db *sql.DB, table string) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT * FROM "`+table+`"`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		b.WriteString(table)
		for i, c := range cols {
			if volatileColumn(table, c) {
				continue
			}
			v := vals[i]
			if raw, ok := v.([]byte); ok {
				v = string(raw)
			}
			fmt.Fprintf(&b, " %s=%v", c, v)
		}
		out = append(out, b.String())
	}
	return out
}

// volatileColumn names what every authenticated request may move without acting: when an
// executor was last seen.
func volatileColumn(table, col string) bool {
	return table == "executors" && col == "last_seen_at"
}

func diffRows(before, after []string) string {
	var b strings.Builder
	for _, r := range before {
		if !slices.Contains(after, r) {
			b.WriteString("- " + r + "\n")
		}
	}
	for _, r := range after {
		if !slices.Contains(before, r) {
			b.WriteString("+ " + r + "\n")
		}
	}
	return b.String()
}
