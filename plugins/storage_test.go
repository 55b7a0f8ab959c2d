package plugins

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/sdk/plugin"
	"github.com/nexuskernel/nexus/sdk/refusal"
)

// fakeGuard names every memory plugin's root "r-<data dir>" and refuses it while split is set.
type fakeGuard struct {
	mu        sync.Mutex
	split     bool
	rootErr   error
	admitted  []StorageRoot
	checks    int
	forgotten []string
}

const codeTestSplit = "test_split"

func (g *fakeGuard) Root(e Entry, _ plugin.Info, dataDir string) (StorageRoot, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.rootErr != nil {
		return StorageRoot{}, false, g.rootErr
	}
	if e.Kind != plugin.KindMemory {
		return StorageRoot{}, false, nil
	}
	return StorageRoot{ID: "r-" + dataDir, Path: dataDir}, true, nil
}

func (g *fakeGuard) refusal() *refusal.Refusal {
	if g.split {
		return refusal.New(refusal.Conflict, codeTestSplit, "another root is in use")
	}
	return nil
}

func (g *fakeGuard) Admit(_ context.Context, _ string, root StorageRoot) (*refusal.Refusal, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.admitted = append(g.admitted, root)
	return g.refusal(), nil
}

func (g *fakeGuard) Check(context.Context, string, StorageRoot) (*refusal.Refusal, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.checks++
	return g.refusal(), nil
}

func (g *fakeGuard) Forget(_ context.Context, name string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.forgotten = append(g.forgotten, name)
	return nil
}

func (g *fakeGuard) set(f func(g *fakeGuard)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f(g)
}

func (g *fakeGuard) read(f func(g *fakeGuard)) { g.set(f) }

// startGuarded runs the entries on a recording plane with the guard, rereading held roots every
// 20 ms.
func startGuarded(t *testing.T, g *fakeGuard, entries ...Entry) *testHost {
	t.Helper()
	timings := fastTimings
	timings.RootRecheck = 20 * time.Millisecond
	return startHostGuarded(t, newPlane(), timings, g, entries...)
}

// TestStorageGuardHoldsUnready: a memory plugin whose root the guard refuses is held refused with
// the guard's refusal, listed by Unready and logged, and writes nothing to the executor plane (the
// executor is the other instances'); it is checked again on its clock and loads by itself once
// the guard would admit it; a tool provider, which names no root, is never held; and a removed
// block's root is forgotten.
func TestStorageGuardHoldsUnready(t *testing.T) {
	t.Parallel()
	g := &fakeGuard{split: true}
	mem := scenarioEntry(t, "mem", plugin.KindMemory, "memory-inmem")
	tools := scenarioEntry(t, "tools", plugin.KindToolProvider, "tools-example")
	th := startGuarded(t, g, mem, tools)
	th.waitState(t, "tools", StateReady, 30*time.Second)
	st := th.waitState(t, "mem", StateRefused, 30*time.Second)
	if st.Refusal == nil || st.Refusal.Code != codeTestSplit || st.Refusal.Message != "another root is in use" || st.ExecutorPublicID != nil {
		t.Fatalf("held status: %+v", st)
	}
	if got := th.Unready(); !slices.Equal(got, []string{"plugins: mem: test_split: another root is in use"}) {
		t.Fatalf("Unready: %q", got)
	}
	if !strings.Contains(th.logs.String(), "plugin held unready") {
		t.Fatalf("no log line says why: %s", th.logs.String())
	}
	th.plane.mu.Lock()
	_, registered := th.plane.ids["plugin:mem"]
	th.plane.mu.Unlock()
	if registered {
		t.Fatal("a held plugin touched its executor")
	}
	// Rechecked on its clock while held.
	deadline := time.Now().Add(30 * time.Second)
	for checks := 0; checks < 2; g.read(func(g *fakeGuard) { checks = g.checks }) {
		if time.Now().After(deadline) {
			t.Fatal("the held plugin never read the roots again")
		}
		time.Sleep(5 * time.Millisecond)
	}

	g.set(func(g *fakeGuard) { g.split = false })
	st = th.waitState(t, "mem", StateReady, 30*time.Second)
	if st.Refusal != nil || len(th.Unready()) != 0 {
		t.Fatalf("admitted status: %+v, Unready %q", st, th.Unready())
	}
	var admitted []StorageRoot
	g.read(func(g *fakeGuard) { admitted = slices.Clone(g.admitted) })
	if len(admitted) != 2 || admitted[0] != admitted[1] || admitted[0].ID == "" {
		t.Fatalf("admissions: %+v, want the memory plugin's root twice", admitted)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := th.Reload(ctx, &Catalog{Entries: []Entry{tools}}); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for forgotten := []string(nil); !slices.Equal(forgotten, []string{"mem"}); g.read(func(g *fakeGuard) { forgotten = slices.Clone(g.forgotten) }) {
		if time.Now().After(deadline) {
			t.Fatalf("the removed block's root was not forgotten: %q", forgotten)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStorageGuardRootError: a root the guard cannot name is a failed start, retried.
func TestStorageGuardRootError(t *testing.T) {
	t.Parallel()
	g := &fakeGuard{rootErr: errors.New("no marker")}
	th := startGuarded(t, g, scenarioEntry(t, "mem", plugin.KindMemory, "memory-inmem"))
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := th.status(t, "mem")
		if st.LastError != nil && *st.LastError == CodeStartFailed+": storage root: no marker" && st.State != StateReady && st.State != StateRefused {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status: %+v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	g.set(func(g *fakeGuard) { g.rootErr = nil })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := th.Restart(ctx, "mem"); err != nil {
		t.Fatal(err)
	}
	th.waitState(t, "mem", StateReady, 30*time.Second)
}

// TestStorageGuardFailedReplacement: a reload whose replacement is held by its root leaves the
// running instance serving, and that instance records its own root again, over the one the
// replacement recorded.
func TestStorageGuardFailedReplacement(t *testing.T) {
	t.Parallel()
	g := &fakeGuard{}
	mem := scenarioEntry(t, "mem", plugin.KindMemory, "memory-inmem")
	th := startGuarded(t, g, mem)
	before := th.waitState(t, "mem", StateReady, 30*time.Second)
	g.set(func(g *fakeGuard) { g.split = true })
	changed := mem
	changed.MaxConcurrency = 3
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := th.Reload(ctx, &Catalog{Entries: []Entry{changed}})
	if err != nil || !slices.Equal(rep.Changed, []string{"mem"}) {
		t.Fatalf("reload: %+v %v", rep, err)
	}
	after := th.status(t, "mem")
	if after.State != StateReady || after.PID == nil || *after.PID != *before.PID || after.LastError == nil ||
		!strings.Contains(*after.LastError, "replacement failed: "+codeTestSplit) {
		t.Fatalf("after the held replacement: %+v", after)
	}
	var admitted []StorageRoot
	g.read(func(g *fakeGuard) { admitted = slices.Clone(g.admitted) })
	if len(admitted) != 3 {
		t.Fatalf("admissions %+v: want the first, the replacement's, and the serving one's again", admitted)
	}
}
