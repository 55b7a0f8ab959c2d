package plugins

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// fastReannounceSpacing is the tests' spacing between two re-announcements of one plugin.
const fastReannounceSpacing = 300 * time.Millisecond

// announcementCount is how many announcements the executor received.
func (p *recordingPlane) announcementCount(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.announcements[id])
}

func toolNames(a announce.Announcement) []string {
	var out []string
	for _, t := range a.Tools {
		out = append(out, t.Name)
	}
	slices.Sort(out)
	return out
}

// TestReannouncement: a plugin of protocol 1.1 or later (this SDK's minor) whose list changes is
// re-announced whole, through the load's validation, without a restart; the status shows the
// revision; a refused re-announcement keeps the previous announcement, is logged with its word,
// name and path and shown in the status.
func TestReannouncement(t *testing.T) {
	t.Parallel()
	e := scenarioEntry(t, "re", plugin.KindToolProvider, "reannounce")
	th := startHost(t, e)
	st := th.waitState(t, "re", StateReady, 10*time.Second)
	id := th.executor(t, "re")
	if st.Announcement.Revision != 1 || st.Announcement.AnnouncedAt == nil || st.Announcement.Refusal != nil || st.Info.ProtocolMinor != plugin.ProtocolMinor {
		t.Fatalf("at load: %+v, info %+v", st.Announcement, st.Info)
	}
	loads := th.plane.announcementCount(id)

	th.plane.push(id, toolClaim("g", "grow", `{}`, &announce.EffectWrite))
	th.plane.await(t, 10*time.Second, "the re-announcement", func() bool { return len(th.plane.announcements[id]) == loads+1 })
	a, _ := th.plane.lastAnnouncement(id)
	if got := toolNames(a); !slices.Contains(got, "grown") || len(got) != 6 {
		t.Fatalf("re-announced %v", got)
	}
	st = th.status(t, "re")
	if st.Announcement.Revision != 2 || !slices.Contains(st.Tools, "grown") || st.Generation != 1 || st.Restarts != 0 {
		t.Fatalf("after growing: %+v", st)
	}
	if !containsLine(th.logs.String(), "re-announced: plugin=re executor="+id+" revision=2 tools=6 added=[\"grown\"] removed=[]") {
		t.Errorf("no re-announcement log line:\n%s", th.logs.String())
	}

	// The next change waits out the spacing after the last re-announcement.
	grewAt := time.Now()
	th.plane.push(id, toolClaim("s", "shrink", `{}`, &announce.EffectWrite))
	th.plane.await(t, 10*time.Second, "the second re-announcement", func() bool { return len(th.plane.announcements[id]) == loads+2 })
	if d := time.Since(grewAt); d < fastReannounceSpacing/2 {
		t.Errorf("the second re-announcement came %v after the first; the spacing is %v", d, fastReannounceSpacing)
	}
	if a, _ := th.plane.lastAnnouncement(id); slices.Contains(toolNames(a), "grown") {
		t.Errorf("after shrinking: %v", toolNames(a))
	}

	// A kernel name in the new list: refused, the previous announcement stays.
	th.plane.push(id, toolClaim("p", "poison", `{}`, &announce.EffectWrite))
	end := time.Now().Add(10 * time.Second)
	for th.status(t, "re").Announcement.Refusal == nil {
		if time.Now().After(end) {
			t.Fatal("the refused re-announcement is not in the status")
		}
		time.Sleep(10 * time.Millisecond)
	}
	st = th.status(t, "re")
	r := st.Announcement.Refusal
	if r.Code != CodeReservedNamespace || r.Name != "delegate_task" || r.Path != "tools[5].name" {
		t.Errorf("refusal %+v", r)
	}
	if st.State != StateReady || st.Announcement.Revision != 3 || slices.Contains(st.Tools, "delegate_task") || th.plane.announcementCount(id) != loads+2 {
		t.Errorf("after the refusal: %+v, %d announcements", st, th.plane.announcementCount(id))
	}
	if !containsLine(th.logs.String(), "re-announcement refused; the previous announcement stays: plugin=re revision=4 code=reserved_namespace name=delegate_task path=tools[5].name") {
		t.Errorf("no refusal log line:\n%s", th.logs.String())
	}
}

// TestLostAnswer: a lost answer settles without a restart: a non-replayable call expires at once
// (uncertain), a replayable one is replayed on the same instance, and one lost three times
// expires (timed_out).
func TestLostAnswer(t *testing.T) {
	t.Parallel()
	e := scenarioEntry(t, "lost", plugin.KindToolProvider, "lost-answer")
	th := startHost(t, e)
	st := th.waitState(t, "lost", StateReady, 10*time.Second)
	id := th.executor(t, "lost")

	th.plane.push(id, toolClaim("w", "lost_write", `{}`, &announce.EffectWrite))
	th.plane.await(t, 10*time.Second, "the uncertain expiry", func() bool { return countExpired(th.plane.expired, "w") == 1 })
	th.plane.push(id, toolClaim("o", "lost_once", `{}`, &announce.EffectPure))
	th.plane.await(t, 10*time.Second, "the replayed call", func() bool { return countTask(th.plane.commits, "o") == 1 })
	if got := th.plane.commitsFor("o")[0]; text(t, got) != "survived" || *got.Title != "attempt 2" {
		t.Errorf("replay committed %q %q", text(t, got), *got.Title)
	}
	th.plane.push(id, toolClaim("p", "lost_pure", `{}`, &announce.EffectPure))
	th.plane.await(t, 10*time.Second, "the expiry after three attempts", func() bool { return countExpired(th.plane.expired, "p") == 1 })

	// Each settlement at once says why, never that a deadline passed.
	th.plane.mu.Lock()
	causes := map[string]string{"w": th.plane.causes["w"], "p": th.plane.causes["p"]}
	th.plane.mu.Unlock()
	if causes["w"] != ExpiredAnswerLost || causes["p"] != fmt.Sprintf(ExpiredReplaysSpent, 3) {
		t.Errorf("causes of the settlements at once: %q", causes)
	}
	after := th.status(t, "lost")
	if len(th.plane.commitsFor("w")) != 0 || len(th.plane.commitsFor("p")) != 0 {
		t.Errorf("a lost call was committed: %+v %+v", th.plane.commitsFor("w"), th.plane.commitsFor("p"))
	}
	// lost_once replayed once; lost_pure twice (attempts 2 and 3) before it expired.
	if after.Generation != st.Generation || after.Restarts != 0 || after.Calls.Replayed != 3 || after.Calls.Expired != 2 || after.Calls.Completed != 1 {
		t.Errorf("after the lost answers: %+v", after)
	}
}

// TestProtocol10Plugin: a plugin that speaks only protocol 1.0 keeps working against this host:
// it loads, its calls commit, no watch is opened (its list changes are not announced, which is
// all a 1.0 plugin can expect), and an error it returns is a failed call, never a lost answer.
func TestProtocol10Plugin(t *testing.T) {
	t.Parallel()
	e := scenarioEntry(t, "old", plugin.KindToolProvider, "tools-1.0")
	th := startHost(t, e)
	st := th.waitState(t, "old", StateReady, 10*time.Second)
	id := th.executor(t, "old")
	if st.Info.ProtocolMinor != 0 || st.Announcement.Revision != 0 || st.Announcement.AnnouncedAt == nil {
		t.Fatalf("a 1.0 plugin's status: info %+v, announcement %+v", st.Info, st.Announcement)
	}
	loads := th.plane.announcementCount(id)

	th.plane.push(id, toolClaim("e", "echo", `{"a":1}`, &announce.EffectWrite))
	th.plane.push(id, toolClaim("g", "grow", `{}`, &announce.EffectWrite))
	th.plane.push(id, toolClaim("l", "lost", `{}`, &announce.EffectWrite))
	th.plane.await(t, 10*time.Second, "the three calls", func() bool { return len(th.plane.commits) == 3 })
	if got := th.plane.commitsFor("e")[0]; text(t, got) != `echo {"a":1}` {
		t.Errorf("echo committed %+v", got)
	}
	if got := th.plane.commitsFor("l")[0]; got.Outcome != OutcomeFailed || got.FailureDetail != "internal: the server exited mid-call: toolprovider: outcome unknown" {
		t.Errorf("a 1.0 plugin's error committed %+v", got)
	}
	time.Sleep(3 * fastReannounceSpacing)
	th.plane.mu.Lock()
	expired := len(th.plane.expired)
	th.plane.mu.Unlock()
	if n := th.plane.announcementCount(id); n != loads || expired != 0 {
		t.Errorf("%d announcements after the load's %d, %d expired", n, loads, expired)
	}
	if st := th.status(t, "old"); st.State != StateReady || st.Restarts != 0 || slices.Contains(st.Tools, "grown") {
		t.Errorf("after the calls: %+v", st)
	}
}

// closedFile waits for the file a closingTools plugin writes when Serve closes it.
func closedFile(t *testing.T, dir string, pid int) {
	t.Helper()
	path := filepath.Join(dir, "closed-"+strconv.Itoa(pid))
	end := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("plugin %d exited without closing its provider", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestProviderClosed: Serve closes a provider that is an io.Closer before its process exits on
// the host's graceful stop. (A plugin whose host is killed outright is killed with it on Linux,
// Pdeathsig, with no chance to close; wire's Finisher test covers the watchdog's path.)
func TestProviderClosed(t *testing.T) {
	t.Parallel()
	e := scenarioEntry(t, "closer", plugin.KindToolProvider, "closer")
	th := startHost(t, e)
	st := th.waitState(t, "closer", StateReady, 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := th.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	closedFile(t, e.Env[envDir], *st.PID)
}
