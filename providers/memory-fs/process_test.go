package memoryfs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	memoryfs "github.com/nexuskernel/nexus/providers/memory-fs"
	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/memory/memorytest"
)

// Environment of a helper process: the test binary re-executed to act as a second process
// sharing a root.
const (
	helperEnv  = "MEMORYFS_HELPER"
	helperRoot = "MEMORYFS_HELPER_ROOT"
	helperID   = "MEMORYFS_HELPER_ID"
)

// crossProcessSlots is how many slots each process edits, and crossProcessCreates how many
// documents each tries to create: enough interleaving to lose updates without a shared lock.
const (
	crossProcessWorkers = 3
	crossProcessSlots   = 15
	crossProcessCreates = 40
)

func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		os.Exit(helperMain(role, os.Getenv(helperRoot), os.Getenv(helperID)))
	}
	code := m.Run()
	removeBenchTree()
	os.Exit(code)
}

// helperMain runs one process's share of the cross-process test and answers its exit code.
func helperMain(role, root, id string) int {
	ctx := context.Background()
	s, err := memoryfs.Open(ctx, memoryfs.Config{Root: root})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer s.Close()
	switch role {
	case "edit":
		for i := range crossProcessSlots {
			slot := id + "." + strconv.Itoa(i)
			_, err := s.Edit(ctx, &memory.EditRequest{Scope: memorytest.Workspace, Name: "shared", OldText: "[" + slot + " open]", NewText: "[" + slot + " done]", WrittenAt: memorytest.T0})
			if err != nil {
				fmt.Fprintln(os.Stderr, "edit", slot, err)
				return 1
			}
		}
	case "create":
		full := 0
		for i := range crossProcessCreates {
			_, err := s.Write(ctx, &memory.WriteRequest{Scope: memorytest.User, Name: "p" + id + "-" + strconv.Itoa(i), Content: "x", WrittenAt: memorytest.T0})
			switch {
			case errors.Is(err, memory.ErrFull):
				full++
			case err != nil:
				fmt.Fprintln(os.Stderr, "create", err)
				return 1
			}
		}
		fmt.Println(full)
	default:
		return 2
	}
	return 0
}

// TestCrossProcessLocking runs several processes on one root at once: concurrent edits of one
// document all land, and concurrent creates stop at exactly the cap.
func TestCrossProcessLocking(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s := openAt(t, root)
	var doc strings.Builder
	for w := range crossProcessWorkers {
		for i := range crossProcessSlots {
			fmt.Fprintf(&doc, "[%d.%d open]\n", w, i)
		}
	}
	write(t, s, memorytest.Workspace, "shared", doc.String(), memorytest.T0)

	outputs := make([]string, 2*crossProcessWorkers)
	var wg sync.WaitGroup
	for w := range crossProcessWorkers {
		for r, role := range []string{"edit", "create"} {
			wg.Go(func() {
				cmd := exec.CommandContext(t.Context(), os.Args[0])
				cmd.Env = append(os.Environ(), helperEnv+"="+role, helperRoot+"="+root, helperID+"="+strconv.Itoa(w))
				out, err := cmd.Output()
				if err != nil {
					var stderr []byte
					if ee, ok := err.(*exec.ExitError); ok {
						stderr = ee.Stderr
					}
					t.Errorf("helper %s %d: %v\n%s", role, w, err, stderr)
				}
				outputs[2*w+r] = strings.TrimSpace(string(out))
			})
		}
	}
	wg.Wait()

	got, err := s.Read(t.Context(), &memory.ReadRequest{Scope: memorytest.Workspace, Name: "shared"})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.ReplaceAll(doc.String(), "open]", "done]")
	if got.Content != want || got.Entry.Version != crossProcessWorkers*crossProcessSlots+1 {
		t.Errorf("after %d processes edited: version %d, %d slots still open", crossProcessWorkers, got.Entry.Version, strings.Count(got.Content, "open]"))
	}
	full := 0
	for w := range crossProcessWorkers {
		n, err := strconv.Atoi(outputs[2*w+1])
		if err != nil {
			t.Fatalf("helper create %d printed %q", w, outputs[2*w+1])
		}
		full += n
	}
	ls, err := s.Ls(t.Context(), &memory.LsRequest{Scope: memorytest.User})
	if err != nil {
		t.Fatal(err)
	}
	if len(ls.Entries) != memory.MaxDocumentsPerAnchor || full != crossProcessWorkers*crossProcessCreates-memory.MaxDocumentsPerAnchor {
		t.Errorf("creates from %d processes: %d documents, %d refused full", crossProcessWorkers, len(ls.Entries), full)
	}
}
