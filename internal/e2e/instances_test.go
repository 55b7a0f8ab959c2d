package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/liveness"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/internal/testserver"
	"github.com/nexuskernel/nexus/sdk/client"
)

// instancesConfig is the settings of the several-instances tests
// (docs/operations.md#instance-liveness-and-takeover): claims whose deadline (model_timeout, ten
// minutes) is far past anything the tests wait for, so that a run that completes did so by
// takeover, and a heartbeat short enough for the suite.
const instancesConfig = `
kernel {
  workers            = 8
  model_timeout      = "10m"
  sweep_interval     = "100ms"
  heartbeat_interval = "200ms"
  heartbeat_timeout  = "1s"
}
`

// instancesHeartbeatTimeout is heartbeat_timeout above.
const instancesHeartbeatTimeout = time.Second

// takeoverWithin bounds how long the survivor may take to complete every acknowledged run after a
// kill: a minute, ten times less than the claims' deadline.
const takeoverWithin = time.Minute

// loadTimes are the load's length and the kill's moment: the operator's 20 s and 8 s under
// `make soak` (NEXUS_SOAK=1), a short load in every run of the suite.
//
// loadPace spaces each client's creates: four clients then offer 20 runs a second, which one
// instance's eight workers serve with room to spare on a loaded machine, so that what the test
// waits for after the kill is the takeover and not a backlog.
const loadPace = 200 * time.Millisecond

func loadTimes() (load, kill time.Duration) {
	if os.Getenv("NEXUS_SOAK") != "" {
		return 20 * time.Second, 8 * time.Second
	}
	return 3 * time.Second, 1500 * time.Millisecond
}

// twoCallRun is a run of two memory calls in one round, then an answer; the round's model call
// takes a tenth of a second, so that an instance holds model claims most of the time.
func twoCallRun(i int) map[string]any {
	return memoryRun(fmt.Sprintf("Two calls.\n!mock\nround 1\nsleep 100\ncall memory_write {\"path\":\"workspace/n%d.md\",\"content\":\"n\"}\n"+
		"call memory_ls {}\nround 2\nsay done {{round}}", i))
}

// listInstances reads GET /agent_api/v1/instances on in with token.
func listInstances(t testing.TB, in *testserver.Instance, token string) (int, conversations.InstancesResponse, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, in.URL+"/agent_api/v1/instances", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out conversations.InstancesResponse
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatalf("instances: %v: %s", err, body)
		}
	}
	return resp.StatusCode, out, body
}

// selfID is the id of the instance in answers as itself.
func selfID(t testing.TB, in *testserver.Instance) string {
	t.Helper()
	code, out, body := listInstances(t, in, in.AdminToken)
	if code != http.StatusOK {
		t.Fatalf("instances: %d %s", code, body)
	}
	for _, i := range out.Instances {
		if i.Self {
			return i.ID
		}
	}
	t.Fatalf("no instance answers as itself: %s", body)
	return ""
}

// heldRow is a row a kernel claim of an instance holds.
type heldRow struct {
	ID         int64 `db:"id"`
	Generation int64 `db:"claim_generation"`
}

// openStore opens the instances' shared store for reading what the rows say.
func openStore(t testing.TB, url string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), url, store.Options{MaxReaders: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// heldBy lists the running rows held by kernel claims of instance id.
func heldBy(t testing.TB, st *store.Store, id string) []heldRow {
	t.Helper()
	var rows []heldRow
	if err := st.Reader().Select(context.Background(), &rows, `SELECT id, claim_generation FROM tasks
WHERE claimed_instance = ? AND claimed_at IS NOT NULL AND status = 'running'`, id); err != nil {
		t.Fatal(err)
	}
	return rows
}

// holdsSealedRound reports whether the instance holds the claim of a model round it has sealed:
// the seal commits before the model call, so such a round is in its call, with no transaction of
// the instance open that another instance's takeover would wait on.
func holdsSealedRound(t testing.TB, st *store.Store, id string) bool {
	t.Helper()
	var n int
	if err := st.Reader().Get(context.Background(), &n, `SELECT COUNT(*) FROM tasks
WHERE claimed_instance = ? AND claimed_at IS NOT NULL AND status = 'running' AND kind = 'model_task' AND sealed_request_id IS NOT NULL`, id); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// freshClaim is how recent a first round's claim must be for a kill to land inside its model
// call of a tenth of a second (twoCallRun).
const freshClaim = 30 * time.Millisecond

// holdsFreshRound reports whether the instance holds the claim of a lineage's first round taken
// within the last freshClaim.
func holdsFreshRound(t testing.TB, st *store.Store, id string) bool {
	t.Helper()
	var n int
	if err := st.Reader().Get(context.Background(), &n, `SELECT COUNT(*) FROM tasks
WHERE claimed_instance = ? AND claimed_at > ? AND status = 'running' AND kind = 'model_task' AND task_key = lineage_root`,
		id, time.Now().Add(-freshClaim).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// takeoverTime waits until every held row was claimed again (a later generation) and answers how
// many were, and the time from killed to the last of those claims, as the rows record them. A
// row the dead instance's last commit settled (it reached the database just before the
// connection's end did) was not taken over and does not count. live is the status of a held row
// while it waits: running for a kernel row, dispatched for a plugin's.
func takeoverTime(t testing.TB, st *store.Store, held []heldRow, killed time.Time, within time.Duration, live string) (int, time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var last int64
	taken := 0
	for _, h := range held {
		for {
			var row struct {
				Generation int64   `db:"claim_generation"`
				ClaimedAt  *int64  `db:"claimed_at"`
				Kind       string  `db:"kind"`
				Status     string  `db:"status"`
				Instance   *string `db:"claimed_instance"`
				Attempts   int64   `db:"attempts"`
			}
			if err := st.Reader().Get(context.Background(), &row, `SELECT claim_generation, claimed_at, kind, status, claimed_instance, attempts
FROM tasks WHERE id = ?`, h.ID); err != nil {
				t.Fatal(err)
			}
			if row.Generation > h.Generation && row.ClaimedAt != nil {
				last = max(last, *row.ClaimedAt)
				taken++
				break
			}
			if row.Generation == h.Generation && row.Status != live {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("row %d was not claimed again within %v: %+v (claimed by %s at %d)", h.ID, within, row, deref(row.Instance), deref(row.ClaimedAt))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if taken == 0 {
		return 0, 0
	}
	return taken, time.UnixMilli(last).Sub(killed)
}

// waitLog waits until in's log holds text.
func waitLog(t testing.TB, in *testserver.Instance, text string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(in.Logs(), text) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never logged %q", in, text)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestInstanceKilledUnderLoad: two instances on one PostgreSQL, four clients creating two-call
// memory runs through both, one instance killed with SIGKILL mid-load and not restarted. Every
// run an instance acknowledged completes on the survivor within a minute, though the claims the
// dead one held had ten minutes to their deadline: the survivor declared it dead when its
// heartbeat lapsed and released its claims by the expiry rule.
func TestInstanceKilledUnderLoad(t *testing.T) {
	// Not parallel: four server processes on one PostgreSQL beside the rest of the suite would
	// crowd its connections, and a refused connection fails an evaluation, not a takeover.
	if storetest.PostgresURL() == "" {
		t.Log("several instances share PostgreSQL; SQLite serves one (TestSingleInstanceListsItself)")
		return
	}
	one := testserver.Start(t, testserver.Options{Dialect: store.Postgres, Subprocess: true, Config: instancesConfig})
	two := testserver.Start(t, testserver.Options{Peer: one, Subprocess: true, Config: instancesConfig})
	st := openStore(t, one.DatabaseURL)
	oneID, twoID := selfID(t, one), selfID(t, two)
	if _, out, body := listInstances(t, two, two.AdminToken); len(out.Instances) != 2 {
		t.Fatalf("two instances started, listed: %s", body)
	}
	load, killAt := loadTimes()
	ctx := context.Background()
	var (
		mu    sync.Mutex
		acked []string
		wg    sync.WaitGroup
	)
	start := time.Now()
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; time.Since(start) < load; i++ {
				in := one
				if (w+i)%2 == 1 {
					in = two
				}
				created, err := in.Client().CreateRun(ctx, "default", twoCallRun(w*100000+i), "")
				if err != nil {
					continue // refused by a dead instance: never acknowledged
				}
				mu.Lock()
				acked = append(acked, created.Run.PublicID)
				mu.Unlock()
				time.Sleep(loadPace)
			}
		}(w)
	}
	time.Sleep(killAt)
	// The kill comes while the instance holds a kernel claim: the rows are its work in flight. It
	// waits for a first round claimed in the last freshClaim, whose model call (a tenth of a
	// second) is then still running when the kill lands: a claim seen in its last milliseconds
	// could settle before the kill, and leave nothing for the survivor to take over.
	for deadline := time.Now().Add(30 * time.Second); !holdsFreshRound(t, st, oneID); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first instance never held a kernel claim under the load")
		}
	}
	one.Kill()
	killed := time.Now()
	held := heldBy(t, st, oneID)
	wg.Wait()
	if len(held) == 0 {
		t.Fatal("the killed instance held no kernel claim: the load did not reach it")
	}
	taken, took := takeoverTime(t, st, held, killed, takeoverWithin, "running")
	c := two.Client()
	for _, id := range acked {
		run := waitRun(t, c, id, takeoverWithin-time.Since(killed))
		if run.Status != "completed" || deref(run.Answer) != "done 2" {
			t.Fatalf("run %s on the survivor: %s %q", id, run.Status, deref(run.Answer))
		}
	}
	if since := time.Since(killed); since >= takeoverWithin {
		t.Fatalf("the survivor took %v, as if it waited for the claims' deadline", since)
	}
	waitLog(t, two, "instance declared dead", 10*time.Second)
	if taken > 0 {
		waitLog(t, two, "released the kernel claims of a dead instance", 10*time.Second)
	}
	_, out, body := listInstances(t, two, two.AdminToken)
	if len(out.Instances) != 1 || out.Instances[0].ID != twoID || !out.Instances[0].Self {
		t.Fatalf("after the kill the live instances are: %s", body)
	}
	t.Logf("%d acknowledged runs completed; %d of the %d claims the dead instance held taken over %v after the kill (heartbeat timeout %v)",
		len(acked), taken, len(held), took, instancesHeartbeatTimeout)
}

// TestPausedInstanceCommitRefused: an instance stopped with SIGSTOP while it holds a model round,
// past the heartbeat timeout, is declared dead; the survivor takes the round over and completes
// the run. Continued with SIGCONT, the paused instance's late commit of the round is refused by the
// claim fence: the round's calls exist once, and the instance learns it was declared dead and
// serves again.
func TestPausedInstanceCommitRefused(t *testing.T) {
	// Not parallel: four server processes on one PostgreSQL beside the rest of the suite would
	// crowd its connections, and a refused connection fails an evaluation, not a takeover.
	if storetest.PostgresURL() == "" {
		t.Log("several instances share PostgreSQL; SQLite serves one (TestSingleInstanceListsItself)")
		return
	}
	one := testserver.Start(t, testserver.Options{Dialect: store.Postgres, Subprocess: true, Config: instancesConfig})
	st := openStore(t, one.DatabaseURL)
	oneID := selfID(t, one)
	c := one.Client()
	ctx := context.Background()
	script := "Pause.\n!mock\nround 1\nsleep 2500\ncall memory_write {\"path\":\"workspace/once.md\",\"content\":\"once\"}\nround 2\nsay done {{round}}"
	created, err := c.CreateRun(ctx, "default", memoryRun(script), "")
	if err != nil {
		t.Fatal(err)
	}
	run := created.Run.PublicID
	// The pause lands in the round's model call: paused inside the seal's transaction, the
	// instance would hold the locks the survivor's own seal of the round waits on.
	deadline := time.Now().Add(30 * time.Second)
	for !holdsSealedRound(t, st, oneID) {
		if time.Now().After(deadline) {
			t.Fatal("the round never was claimed and sealed on the first instance")
		}
		time.Sleep(10 * time.Millisecond)
	}
	one.Pause()
	paused := true
	defer func() {
		if paused {
			one.Resume()
		}
	}()
	two := testserver.Start(t, testserver.Options{Peer: one, Subprocess: true, Config: instancesConfig})
	final := waitRun(t, two.Client(), run, takeoverWithin)
	if final.Status != "completed" || deref(final.Answer) != "done 2" {
		t.Fatalf("run on the survivor: %s %q", final.Status, deref(final.Answer))
	}
	waitLog(t, two, "instance declared dead", 10*time.Second)
	one.Resume()
	paused = false
	// The paused instance's round wakes past its sleep and commits under a claim that is gone.
	waitLog(t, one, "this instance had been declared dead", 30*time.Second)
	time.Sleep(3 * time.Second) // the round's sleep ends and its commit is tried
	got, err := two.Client().Run(ctx, "default", run)
	if err != nil {
		t.Fatal(err)
	}
	writes := 0
	for _, tk := range got.Run.Tasks {
		if tk.ToolName == "memory_write" {
			writes++
		}
		if tk.Status != "completed" {
			t.Errorf("task %s: %s", tk.Key, tk.Status)
		}
	}
	if got.Run.Status != "completed" || writes != 1 {
		t.Fatalf("after the late commit: %s with %d memory_write rows: %s", got.Run.Status, writes, got.Raw)
	}
	tk, err := two.Client().Task(ctx, "default", run, "s1-model-1")
	if err != nil || tk.Task.Attempts == nil || *tk.Task.Attempts != 2 {
		t.Fatalf("the round's attempts: %s %v", tk.Raw, err)
	}
	if _, out, body := listInstances(t, two, two.AdminToken); len(out.Instances) != 2 {
		t.Fatalf("the instance that came back is not listed live: %s", body)
	}
}

// TestSingleInstanceListsItself: one instance (SQLite's only way, and PostgreSQL's smallest)
// lists itself as the one live instance, is ready with its heartbeat current, and the route is an
// owner's: a member is not_authorized, an agent not_user.
func TestSingleInstanceListsItself(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			in := testserver.Start(t, testserver.Options{Dialect: d, Config: instancesConfig})
			code, out, body := listInstances(t, in, in.AdminToken)
			if code != http.StatusOK || len(out.Instances) != 1 || !out.Instances[0].Self ||
				!strings.HasPrefix(out.Instances[0].ID, liveness.InstanceIDPrefix) || out.Instances[0].Host == "" ||
				out.HeartbeatInterval != "200ms" || out.HeartbeatTimeout != "1s" {
				t.Fatalf("instances: %d %s", code, body)
			}
			resp, err := http.Get(in.URL + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("readyz: %d", resp.StatusCode)
			}
			admin, ctx := in.Client(), context.Background()
			member, err := admin.CreateUser(ctx, "default", &client.CreateUserRequest{Handle: "mia", DisplayName: "Mia", Role: "member"})
			if err != nil {
				t.Fatal(err)
			}
			agent, err := admin.CreateAgent(ctx, "default", &client.CreateAgentRequest{Handle: "bot", DisplayName: "Bot"})
			if err != nil {
				t.Fatal(err)
			}
			if code, _, body := listInstances(t, in, member.Token); code != http.StatusForbidden || errorCode(body) != "not_authorized" {
				t.Errorf("as a member: %d %s", code, body)
			}
			if code, _, body := listInstances(t, in, agent.Token); code != http.StatusForbidden || errorCode(body) != "not_user" {
				t.Errorf("as an agent: %d %s", code, body)
			}
		})
	}
}
