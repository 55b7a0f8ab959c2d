package cli

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/client"
)

// TestUploadAndConversationCommands: files uploaded and read back, attached to a run's model step
// and to a message with --attach; conversations listed and archived.
func TestUploadAndConversationCommands(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ls := startServer(t, d)
			ctx := context.Background()
			admin := client.New(ls.url, ls.admin)
			dir := t.TempDir()
			notes := filepath.Join(dir, "notes.txt")
			if err := os.WriteFile(notes, []byte("Ship on Friday.\n"), 0o600); err != nil {
				t.Fatal(err)
			}

			// put, show, get.
			out := ls.nexus(t, nil, "upload", "put", notes)
			m := regexp.MustCompile(`(?m)^upload\s+([0-9a-f-]{36})$`).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("upload put:\n%s", out)
			}
			id := m[1]
			for _, want := range [][2]string{{"uri", "nexus://uploads/" + id}, {"name", "notes.txt"}, {"type", "text/plain; charset=utf-8"}, {"size", "16 bytes"}} {
				line(t, out, want[0], want[1])
			}
			desc, err := admin.Upload(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			line(t, out, "sha256", desc.Upload.SHA256)
			if out := ls.nexus(t, nil, "upload", "show", id, "--json"); out != string(desc.Raw) {
				t.Fatalf("upload show --json:\n%s", out)
			}
			if out := ls.nexus(t, nil, "upload", "get", id); out != "Ship on Friday.\n" {
				t.Fatalf("upload get printed %q", out)
			}
			back := filepath.Join(dir, "back.txt")
			ls.nexus(t, nil, "upload", "get", id, "-o", back)
			if b, err := os.ReadFile(back); err != nil || string(b) != "Ship on Friday.\n" {
				t.Fatalf("upload get -o: %q, %v", b, err)
			}
			fromStdin := strings.TrimSpace(ls.withStdin(t, "from standard input", "upload", "put", "-", "--name", "stdin.txt", "-q"))
			if out := ls.nexus(t, nil, "upload", "show", fromStdin); !regexp.MustCompile(`(?m)^name\s+stdin\.txt$`).MatchString(out) {
				t.Fatalf("upload show of standard input's upload:\n%s", out)
			}
			if _, errs := ls.exits(t, nil, exitUsage, "upload", "put", "-"); !strings.Contains(errs, "an upload from standard input needs --name") {
				t.Fatalf("upload put - without --name: %s", errs)
			}
			ls.refused(t, nil, "not_found (404)", "upload", "get", "01900000-0000-7000-8000-000000000000")
			ls.refused(t, nil, "no such file or directory", "upload", "put", filepath.Join(dir, "missing.txt"))
			// Another user cannot read an upload nothing binds.
			other := map[string]string{EnvToken: strings.TrimSpace(ls.nexus(t, nil, "user", "create", "ned", "-q"))}
			ls.refused(t, other, "not_found (404)", "upload", "get", id)

			// --attach: upload and attach, to a run's model step and to a message.
			out = ls.nexus(t, nil, "run", "create", "--watch", "--attach", notes, "--prompt", "Read this.")
			if !regexp.MustCompile(`^echo: Read this\.\n\[attachment notes\.txt text/plain 16 bytes nexus://uploads/[0-9a-f-]{36}\]\n$`).MatchString(out) {
				t.Fatalf("run create --attach answered %q", out)
			}
			if _, errs := ls.exits(t, nil, exitUsage, "run", "create", "--tool", "x", "--attach", notes); !strings.Contains(errs, "--attach belongs to a model step") {
				t.Fatalf("--attach on a tool step: %s", errs)
			}
			ls.refused(t, nil, "--attach "+filepath.Join(dir, "missing.txt"), "run", "create", "--attach", filepath.Join(dir, "missing.txt"), "--prompt", "x")
			ls.nexus(t, nil, "agent", "create", "helper", "-q")
			conv := strings.TrimSpace(ls.nexus(t, nil, "conversation", "create", "--agent", "helper", "--title", "Plans", "-q"))
			out = ls.nexus(t, nil, "conversation", "send", conv, "--attach", notes)
			if !regexp.MustCompile(`^echo: \n?\[attachment notes\.txt text/plain 16 bytes nexus://uploads/[0-9a-f-]{36}\]\n$`).MatchString(out) {
				t.Fatalf("conversation send --attach answered %q", out)
			}
			if _, errs := ls.exits(t, nil, exitUsage, "conversation", "send", conv); !strings.Contains(errs, "pass the message as TEXT or --file FILE") {
				t.Fatalf("conversation send without a message: %s", errs)
			}

			// list and archive: the agent by handle; a conversation with a live turn is busy.
			out = ls.nexus(t, nil, "conversation", "create", "--agent", "helper", "--title", "Second")
			line(t, out, "answered by", "helper")
			busy := regexp.MustCompile(`(?m)^conversation\s+(\S+)$`).FindStringSubmatch(out)[1]
			ls.nexus(t, nil, "conversation", "send", busy, slowScript, "--no-wait")
			out = ls.nexus(t, nil, "conversation", "list")
			if !regexp.MustCompile(`(?m)^`+busy+`\s+Second\s+helper\s+active\s+`).MatchString(out) ||
				!regexp.MustCompile(`(?m)^`+conv+`\s+Plans\s+helper\s+active\s+-\s+0\s+`).MatchString(out) ||
				strings.Index(out, busy) > strings.Index(out, conv) {
				t.Fatalf("conversation list (newest first):\n%s", out)
			}
			ls.refused(t, nil, "conversation_busy (409)", "conversation", "archive", busy)
			out = ls.nexus(t, nil, "conversation", "archive", conv)
			line(t, out, "status", "archived")
			if out := ls.nexus(t, nil, "conversation", "list", "--status", "archived"); !strings.Contains(out, conv) || strings.Contains(out, busy) {
				t.Fatalf("conversation list --status archived:\n%s", out)
			}
			page, err := admin.Conversations(ctx, "default", "active", "", 0)
			if err != nil || len(page.Conversations) != 1 || page.Conversations[0].PublicID != busy {
				t.Fatalf("active conversations: %+v, %v", page, err)
			}
			if out := ls.nexus(t, nil, "conversation", "list", "--status", "active", "--json"); out != string(page.Raw) {
				t.Fatalf("conversation list --json:\n%s", out)
			}
			ls.refused(t, nil, "conversation_archived (409)", "conversation", "send", conv, "hello")
			ls.refused(t, nil, "parameter_invalid (400)", "conversation", "list", "--status", "gone")
			ls.refused(t, other, "not_authorized (403)", "conversation", "archive", busy)
		})
	}
}
