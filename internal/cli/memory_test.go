package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/client"
)

// withStdin runs the command line in this process with stdin, failing unless it exits 0.
func (ls *liveServer) withStdin(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	errf, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	environ := map[string]string{EnvAddr: ls.url, "NEXUS_DATA_DIR": ls.dataDir}
	e := &env{getenv: func(k string) string { return environ[k] }, stdout: &out, stderr: errf, stdin: strings.NewReader(stdin)}
	if code := run(e, args); code != 0 {
		errb, _ := os.ReadFile(errf.Name())
		t.Fatalf("nexus %s: exit %d\n%s", strings.Join(args, " "), code, errb)
	}
	return out.String()
}

func TestMemoryCommands(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ls := startServer(t, d)
			ctx := context.Background()
			admin := client.New(ls.url, ls.admin)
			changed := regexp.MustCompile(`^(created|replaced|edited) (\S+): (\d+) bytes, version (\d+), public id ([0-9a-f-]{36})\n$`)

			// write --content creates; write --file replaces (reading the version itself).
			out := ls.nexus(t, nil, "memory", "write", "workspace/notes.md", "--content", "alpha\nbeta\n", "-w", "default")
			m := changed.FindStringSubmatch(out)
			if m == nil || m[1] != "created" || m[3] != "11" || m[4] != "1" {
				t.Fatalf("write (create):\n%s", out)
			}
			id := m[5]
			file := filepath.Join(t.TempDir(), "notes.md")
			if err := os.WriteFile(file, []byte("alpha\nbeta\ngamma\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			out = ls.nexus(t, nil, "memory", "write", "workspace/notes.md", "--file", file)
			if m := changed.FindStringSubmatch(out); m == nil || m[1] != "replaced" || m[4] != "2" || m[5] != id {
				t.Fatalf("write (replace):\n%s", out)
			}
			// Standard input, and a skill with its description.
			out = ls.withStdin(t, "# Release notes\nBe brief.\n", "memory", "write", "workspace/skills/release-notes", "--file", "-", "--description", "How we write\nrelease notes.")
			if m := changed.FindStringSubmatch(out); m == nil || m[1] != "created" {
				t.Fatalf("write a skill from stdin:\n%s", out)
			}
			ls.nexus(t, nil, "memory", "write", "user/prefs.md", "--content", "tabs")

			// ls: a table by root then name, a prefix, and --json exactly the API's body.
			out = ls.nexus(t, nil, "memory", "ls")
			rows := strings.Split(strings.TrimSpace(out), "\n")
			if len(rows) != 4 || !strings.HasPrefix(rows[0], "PATH") ||
				!regexp.MustCompile(`^user/prefs\.md\s+4\s+1\s+\S+ \S+\s+-$`).MatchString(rows[1]) ||
				!regexp.MustCompile(`^workspace/notes\.md\s+17\s+2\s+`).MatchString(rows[2]) ||
				!regexp.MustCompile(`^workspace/skills/release-notes\s+26\s+1\s+\S+ \S+\s+How we write release notes\.$`).MatchString(rows[3]) {
				t.Fatalf("memory ls:\n%s", out)
			}
			if out := ls.nexus(t, nil, "memory", "ls", "workspace/skills/"); !strings.Contains(out, "release-notes") || strings.Contains(out, "notes.md") {
				t.Fatalf("memory ls workspace/skills/:\n%s", out)
			}
			if out := ls.nexus(t, nil, "memory", "ls", "workspace/zz"); out != "No memory documents.\n" {
				t.Fatalf("memory ls of nothing: %q", out)
			}
			api, err := admin.MemoryList(ctx, "default", "")
			if err != nil {
				t.Fatal(err)
			}
			if out := ls.nexus(t, nil, "memory", "ls", "--json"); out != string(api.Raw) {
				t.Fatalf("memory ls --json = %s, want the API body %s", out, api.Raw)
			}

			// show prints the content as stored.
			if out := ls.nexus(t, nil, "memory", "show", "workspace/notes.md"); out != "alpha\nbeta\ngamma\n" {
				t.Fatalf("memory show: %q", out)
			}
			shown, err := admin.MemoryShow(ctx, "default", "workspace/notes.md")
			if err != nil {
				t.Fatal(err)
			}
			if out := ls.nexus(t, nil, "memory", "show", "workspace/notes.md", "--json"); out != string(shown.Raw) {
				t.Fatalf("memory show --json = %s", out)
			}

			// edit.
			out = ls.nexus(t, nil, "memory", "edit", "workspace/notes.md", "--old", "beta", "--new", "BETA")
			if m := changed.FindStringSubmatch(out); m == nil || m[1] != "edited" || m[4] != "3" {
				t.Fatalf("memory edit:\n%s", out)
			}

			// grep: path:line: text, -i, a prefix, the limit line.
			if out := ls.nexus(t, nil, "memory", "grep", "^beta$", "-i"); out != "workspace/notes.md:2: BETA\n" {
				t.Fatalf("memory grep -i: %q", out)
			}
			if out := ls.nexus(t, nil, "memory", "grep", "a", "workspace/", "--limit", "2"); out != "workspace/notes.md:1: alpha\nworkspace/notes.md:3: gamma\n[Result limit reached. Narrow the pattern or raise --limit.]\n" {
				t.Fatalf("memory grep --limit: %q", out)
			}
			if out := ls.nexus(t, nil, "memory", "grep", "zeta"); out != "No matches found.\n" {
				t.Fatalf("memory grep of nothing: %q", out)
			}

			// Refusals read as word (status): message.
			ls.refused(t, nil, "stale_object (409)", "memory", "write", "workspace/notes.md", "--content", "x", "--create")
			ls.refused(t, nil, "stale_object (409)", "memory", "write", "workspace/notes.md", "--content", "x", "--expected-public-id", id, "--expected-lock-version", "1")
			ls.refused(t, nil, "skill_description_required (422)", "memory", "write", "user/skills/review", "--content", "x")
			ls.refused(t, nil, "skill_name_invalid (422)", "memory", "write", "user/skills/Review", "--content", "x", "--description", "d")
			ls.refused(t, nil, "memory_description_invalid (422)", "memory", "write", "user/plain.md", "--content", "x", "--description", "d")
			ls.refused(t, nil, "memory_scope_unavailable (422)", "memory", "show", "conversation/x")
			ls.refused(t, nil, "memory_edit_not_found (422)", "memory", "edit", "workspace/notes.md", "--old", "zeta", "--new", "x")
			ls.refused(t, nil, "memory_pattern_invalid (422)", "memory", "grep", "(")
			ls.refused(t, nil, "parameter_invalid (400)", "memory", "grep", "a", "--limit", "501")
			ls.refused(t, nil, "pass exactly one of --file", "memory", "write", "workspace/x", "--content", "x", "--file", file)
			ls.refused(t, nil, "go together", "memory", "rm", "workspace/notes.md", "--expected-lock-version", "3")
			ls.refused(t, nil, "exclude each other", "memory", "write", "workspace/x", "--content", "x", "--create", "--expected-lock-version", "1")
			ls.refused(t, nil, "no memory document workspace/missing.md", "memory", "rm", "workspace/missing.md")

			// rm, then the document is gone.
			if out := ls.nexus(t, nil, "memory", "rm", "workspace/notes.md"); out != "deleted workspace/notes.md\n" {
				t.Fatalf("memory rm: %q", out)
			}
			ls.refused(t, nil, "memory_not_found (404)", "memory", "show", "workspace/notes.md")
			// The user root follows the token: another member sees only the workspace's skill.
			bob := strings.TrimSpace(ls.nexus(t, nil, "user", "create", "bob", "-w", "default", "-q"))
			if out := ls.nexus(t, map[string]string{EnvToken: bob}, "memory", "ls"); strings.Contains(out, "user/prefs.md") || !strings.Contains(out, "workspace/skills/release-notes") {
				t.Fatalf("bob's memory ls:\n%s", out)
			}
		})
	}
}
