package plugins

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// copyBinary copies this test binary to dir, so a test can change the file a catalog names.
func copyBinary(t *testing.T, dir, name string) string {
	t.Helper()
	src, err := os.ReadFile(testBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, src, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReload(t *testing.T) {
	t.Parallel()
	keep := scenarioEntry(t, "keep", plugin.KindToolProvider, "tools-example")
	change := scenarioEntry(t, "change", plugin.KindToolProvider, "tools-example")
	drop := scenarioEntry(t, "drop", plugin.KindMemory, "memory-inmem")
	refused := scenarioEntry(t, "refused", plugin.KindToolProvider, "reserved-name")
	th := startHost(t, keep, change, drop, refused)
	keepSt := th.waitState(t, "keep", StateReady, 10*time.Second)
	changeSt := th.waitState(t, "change", StateReady, 10*time.Second)
	dropID := th.executor(t, "drop")
	refusedSt := th.waitState(t, "refused", StateRefused, 10*time.Second)

	changed := change
	changed.Args = []string{"-test.v=false"} // any attribute counts
	added := scenarioEntry(t, "added", plugin.KindToolProvider, "tools-example")
	rep, err := th.Reload(context.Background(), &Catalog{Entries: []Entry{keep, changed, refused, added}})
	if err != nil {
		t.Fatal(err)
	}
	want := ReloadReport{Added: []string{"added"}, Removed: []string{"drop"}, Changed: []string{"change"}, Unchanged: []string{"keep", "refused"}}
	if diff := cmp.Diff(want, rep); diff != "" {
		t.Errorf("report: %s", diff)
	}
	th.waitState(t, "added", StateReady, 10*time.Second)
	if st := th.status(t, "keep"); st.Generation != keepSt.Generation || *st.PID != *keepSt.PID {
		t.Errorf("an unchanged entry was restarted: %+v", st)
	}
	st := th.waitState(t, "change", StateReady, 10*time.Second)
	if st.Generation <= changeSt.Generation || *st.ExecutorPublicID != *changeSt.ExecutorPublicID {
		t.Errorf("changed entry: %+v (was %+v)", st, changeSt)
	}
	// A refused entry gets one fresh attempt, and is refused again.
	end := time.Now().Add(10 * time.Second)
	for th.status(t, "refused").Generation == refusedSt.Generation && time.Now().Before(end) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := th.waitState(t, "refused", StateRefused, 10*time.Second); st.Generation == refusedSt.Generation {
		t.Error("the refused entry got no fresh attempt")
	}
	// The removed entry's executor is revoked and its process gone.
	th.plane.await(t, 10*time.Second, "the removed executor's revocation", func() bool { return th.plane.revoked[dropID] })
	if _, err := th.StatusOf("drop"); err == nil {
		t.Error("a removed entry still has a status")
	}
	names := []string{}
	for _, s := range th.Status() {
		names = append(names, s.Name)
	}
	if diff := cmp.Diff([]string{"keep", "change", "refused", "added"}, names); diff != "" {
		t.Errorf("status order: %s", diff)
	}
}

// TestReloadBinaryUpgrade: a binary replaced in place is a change even when the catalog is not,
// and a replacement that fails to load leaves the old instance serving.
func TestReloadBinaryUpgrade(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := scenarioEntry(t, "up", plugin.KindToolProvider, "tools-example")
	e.Command = copyBinary(t, dir, "nexus-up")
	th := startHost(t, e)
	before := th.waitState(t, "up", StateReady, 10*time.Second)

	// Same catalog, same file: unchanged.
	rep, err := th.Reload(context.Background(), &Catalog{Entries: []Entry{e}})
	if err != nil || len(rep.Unchanged) != 1 {
		t.Fatalf("%+v %v", rep, err)
	}
	// Upgrade in place (a new file renamed over the old, as installers do): the digest differs,
	// so it is a change and a new instance serves.
	next := copyBinary(t, dir, "nexus-up.new")
	f, err := os.OpenFile(next, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.Write([]byte("upgrade"))
	_ = f.Close()
	if err := os.Rename(next, e.Command); err != nil {
		t.Fatal(err)
	}
	rep, err = th.Reload(context.Background(), &Catalog{Entries: []Entry{e}})
	if err != nil || len(rep.Changed) != 1 {
		t.Fatalf("%+v %v", rep, err)
	}
	after := th.waitState(t, "up", StateReady, 10*time.Second)
	if after.Generation <= before.Generation || after.SHA256 == before.SHA256 {
		t.Errorf("upgrade: %+v", after)
	}
	// A changed entry that is refused leaves the running instance serving and shows the attempt.
	bad := e
	bad.Env = map[string]string{envScenario: "reserved-name", envDir: t.TempDir()}
	if _, err := th.Reload(context.Background(), &Catalog{Entries: []Entry{bad}}); err != nil {
		t.Fatal(err)
	}
	kept := th.status(t, "up")
	if kept.State != StateReady || *kept.PID != *after.PID || deref(kept.LastError) == "" {
		t.Errorf("a refused replacement must leave the old instance: %+v", kept)
	}
	th.plane.mu.Lock()
	presence := th.plane.presence[th.executor(t, "up")]
	th.plane.mu.Unlock()
	if !presence[len(presence)-1] {
		t.Error("the refused replacement set the serving executor offline")
	}
	if a, _ := th.plane.lastAnnouncement(th.executor(t, "up")); len(a.Tools) != 4 {
		t.Errorf("the refused replacement cleared the serving instance's announcement: %+v", a)
	}
	th.plane.push(th.executor(t, "up"), toolClaim("e", "example_echo", `{"text":"still"}`, &announce.EffectPure))
	th.plane.await(t, 10*time.Second, "a call on the kept instance", func() bool { return len(th.plane.commits) == 1 })
}

func TestRestart(t *testing.T) {
	t.Parallel()
	th := startHost(t, scenarioEntry(t, "r", plugin.KindToolProvider, "tools-example"))
	before := th.waitState(t, "r", StateReady, 10*time.Second)
	if err := th.Restart(context.Background(), "r"); err != nil {
		t.Fatal(err)
	}
	after := th.waitState(t, "r", StateReady, 10*time.Second)
	if after.Generation <= before.Generation || *after.PID == *before.PID || *after.ExecutorPublicID != *before.ExecutorPublicID {
		t.Errorf("restart: %+v (was %+v)", after, before)
	}
	time.Sleep(100 * time.Millisecond) // the replaced instance finishes stopping
	th.plane.mu.Lock()
	presence := th.plane.presence[*after.ExecutorPublicID]
	th.plane.mu.Unlock()
	if !presence[len(presence)-1] {
		t.Error("the restarted plugin's executor is offline")
	}
	if err := th.Restart(context.Background(), "nope"); err == nil {
		t.Error("restart of an unknown plugin")
	}
}

func TestShutdown(t *testing.T) {
	t.Parallel()
	plane := newPlane()
	e := scenarioEntry(t, "s", plugin.KindToolProvider, "tools-example")
	h, err := New(Config{Catalog: &Catalog{Entries: []Entry{e}}, Plane: plane, DataDir: t.TempDir(), Timings: fastTimings})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	st, _ := h.StatusOf("s")
	if st.PID == nil {
		t.Fatalf("not ready: %+v", st)
	}
	if err := h.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := syscallAlive(*st.PID); err == nil {
		t.Errorf("plugin %d still runs after shutdown", *st.PID)
	}
	plane.mu.Lock()
	presence := plane.presence[*st.ExecutorPublicID]
	plane.mu.Unlock()
	if len(presence) < 2 || presence[0] != true || presence[len(presence)-1] != false {
		t.Errorf("presence %v", presence)
	}
	if err := h.Start(context.Background()); err != ErrClosed {
		t.Errorf("start after shutdown: %v", err)
	}
}

// TestDisabledEntry: enabled = false keeps the entry but runs nothing.
func TestDisabledEntry(t *testing.T) {
	t.Parallel()
	e := scenarioEntry(t, "off", plugin.KindToolProvider, "tools-example")
	e.Enabled = false
	th := startHost(t, e)
	st := th.status(t, "off")
	if st.Enabled || st.State != StateStopped || st.ExecutorPublicID != nil {
		t.Errorf("%+v", st)
	}
}
