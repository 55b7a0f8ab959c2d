package cli

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/client"
)

// TestImportFlags: `nexus agent configure --import` imports a provider's tools by pattern,
// --dry-run prints what the agent's work would freeze (source and pin) and changes nothing, --pin
// records the pins and --repin replaces them; `nexus run create --import` runs with the imports.
func TestImportFlags(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ls := startServer(t, d)
			ctx := context.Background()
			mia := map[string]string{EnvToken: strings.TrimSpace(ls.nexus(t, nil, "user", "create", "mia", "-q"))}
			ls.nexus(t, nil, "agent", "create", "helper", "--steward", "mia")
			provTok := strings.TrimSpace(ls.nexus(t, nil, "executor", "create", "dictionary", "--kind", "tool_provider", "-q"))
			prov := client.New(ls.url, provTok)
			if _, err := prov.AnnounceRaw(ctx, json.RawMessage(lookupAnnouncement)); err != nil {
				t.Fatal(err)
			}

			dry := ls.nexus(t, mia, "agent", "configure", "helper", "--import", "look*", "--eager", "lookup", "--dry-run")
			if !regexp.MustCompile(`(?m)^lookup\s+tool_provider\s+lookup\s+eager\s+pin -$`).MatchString(dry) {
				t.Fatalf("--dry-run:\n%s", dry)
			}
			if shown := ls.nexus(t, nil, "agent", "show", "helper"); strings.Contains(shown, "look*") {
				t.Fatalf("--dry-run changed the profile:\n%s", shown)
			}

			out := ls.nexus(t, mia, "agent", "configure", "helper", "--import", "look*", "--pin", "--approval-mode", "bypass")
			line(t, out, "imports", "look*")
			pinned := regexp.MustCompile(`(?m)^pinned\s+lookup=(sha256:[0-9a-f]{64})$`).FindStringSubmatch(out)
			if pinned == nil {
				t.Fatalf("--pin:\n%s", out)
			}
			dry = ls.nexus(t, mia, "agent", "configure", "helper", "--dry-run")
			if !strings.Contains(dry, "pin "+pinned[1]) {
				t.Fatalf("--dry-run of the pinned profile:\n%s", dry)
			}
			changed := strings.Replace(lookupAnnouncement, "Look a word up.", "Look a word up and report it elsewhere.", 1)
			if _, err := prov.AnnounceRaw(ctx, json.RawMessage(changed)); err != nil {
				t.Fatal(err)
			}
			if kept := ls.nexus(t, mia, "agent", "configure", "helper", "--instructions", "Be brief."); !strings.Contains(kept, pinned[1]) {
				t.Fatalf("a write without --repin changed the pin:\n%s", kept)
			}
			repinned := ls.nexus(t, mia, "agent", "configure", "helper", "--repin")
			if strings.Contains(repinned, pinned[1]) || !regexp.MustCompile(`(?m)^pinned\s+lookup=sha256:`).MatchString(repinned) {
				t.Fatalf("--repin:\n%s", repinned)
			}

			run := ls.nexus(t, nil, "run", "create", "--import", "look*", "--prompt", "!mock\nround 1\nsay hi", "--json")
			if !strings.Contains(run, `"run"`) {
				t.Fatalf("run create --import: %s", run)
			}
			ls.refused(t, nil, "import_pattern_unmatched", "run", "create", "--import", "nothing_*", "--prompt", "!mock\nround 1\nsay hi")
		})
	}
}
