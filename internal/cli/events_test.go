package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/client"
)

// TestEventsCommand: nexus events prints a workspace's events, as lines or as JSON objects with
// their id and event, resuming after --since-id and stopping after --count.
func TestEventsCommand(t *testing.T) {
	t.Parallel()
	ls := startServer(t, store.SQLite)
	ctx := context.Background()
	admin := client.New(ls.url, ls.admin)
	created, err := admin.CreateRun(ctx, "default", json.RawMessage(`{"approval_mode":"bypass","steps":[{"model":{"model":"mock/scripted","prompt":"!mock\nround 1\nsay hi"}}]}`), "")
	if err != nil {
		t.Fatal(err)
	}
	run := created.Run.PublicID
	if r, err := admin.WaitRun(ctx, "default", run, 30); err != nil || r.Run.Status != "completed" {
		t.Fatalf("run = %+v, %v", r, err)
	}
	start := ls.srv.Events().Epoch() + "-0"
	out := ls.nexus(t, nil, "events", "--since-id", start, "--count", "4", "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := []string{"run.status", "round.sealed", "task.settled", "run.status"}
	if len(lines) != len(want) {
		t.Fatalf("events --json printed %d lines:\n%s", len(lines), out)
	}
	var last string
	for i, l := range lines {
		var ev map[string]any
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev["event"] != want[i] || ev["run_public_id"] != run || ev["id"] == "" {
			t.Fatalf("line %d = %s (%v); want a %s of %s", i, l, err, want[i], run)
		}
		last = ev["id"].(string)
	}
	if ev := ls.nexus(t, nil, "events", "--since-id", start, "--count", "1"); ev != start[:len(start)-1]+"1 run.status run="+run+" status=running\n" {
		t.Fatalf("events printed %q", ev)
	}
	if _, err := admin.CreateRun(ctx, "default", json.RawMessage(`{"approval_mode":"bypass","steps":[{"model":{"model":"mock/scripted","prompt":"!mock\nround 1\nsay again"}}]}`), ""); err != nil {
		t.Fatal(err)
	}
	if ev := ls.nexus(t, nil, "events", "--since-id", last, "--count", "1", "--json"); !strings.Contains(ev, `"event":"run.status"`) || strings.Contains(ev, run) {
		t.Fatalf("events after %s printed %q; want the next run's first event", last, ev)
	}
}

// TestFollow: run create --watch --follow prints the model's text as it streams, a line as each
// tool call begins and settles, and not the answer a second time; conversation send --follow
// prints its answer once the same way.
func TestFollow(t *testing.T) {
	t.Parallel()
	ls := startServer(t, store.SQLite)
	out := ls.withStdin(t, "!mock\nround 1\nsay Let me look.\ncall memory_write {\"path\":\"workspace/a.md\",\"content\":\"x\"}\nround 2\nsay Written: {{last_result}}", "run", "create", "--watch", "--follow",
		"--kernel-tool", "nexus.memory.write", "--prompt-file", "-")
	want := "Let me look.\n[call memory_write]\n[memory_write completed]\nWritten: "
	if !strings.HasPrefix(out, want) || strings.Count(out, "Written:") != 1 || !strings.HasSuffix(out, "\n") {
		t.Fatalf("run create --watch --follow printed\n%s\nwant it to begin\n%s", out, want)
	}
	ls.nexus(t, nil, "agent", "create", "helper", "-q")
	conv := strings.TrimSpace(ls.nexus(t, nil, "conversation", "create", "--agent", "helper", "-q"))
	if out := ls.nexus(t, nil, "conversation", "send", conv, "!mock\nround 1\nsay Looking.\ncall memory_ls {}\nround 2\nsay Hello there.", "--follow"); out != "Looking.\n[call memory_ls]\n[memory_ls failed: unknown_tool]\nHello there.\n" {
		t.Fatalf("conversation send --follow printed %q", out)
	}
}
