package runs

import "testing"

// TestApplyExpiry pins the table (docs/development.md#how-the-kernel-runs-work), one case per row.
func TestApplyExpiry(t *testing.T) {
	t.Parallel()
	read := []byte(`{"kind":"read_only","destructive":false,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"}`)
	edit := []byte(`{"kind":"write","destructive":true,"effect_scope":"closed","idempotency":"none","reconciliation":"lookup","timeout_ms":5000}`)
	writeIntrinsic := []byte(`{"kind":"write","destructive":true,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"lookup"}`)
	cases := []struct {
		name    string
		f       ExpiryFacts
		status  string
		key     string
		release bool
	}{
		{"tool never claimed", ExpiryFacts{Kind: KindTool, Status: StatusDispatched, Profile: edit}, StatusTimedOut, KeyToolTimeout, false},
		{"kernel tool queued, unclaimed", ExpiryFacts{Kind: KindTool, Status: StatusRunning, Profile: edit}, StatusTimedOut, KeyToolTimeout, false},
		{"claimed, read-only", ExpiryFacts{Kind: KindTool, Status: StatusRunning, Generation: 1, ClaimedAt: 1, Profile: read}, StatusTimedOut, KeyToolTimeout, false},
		{"claimed, write intrinsic", ExpiryFacts{Kind: KindTool, Status: StatusDispatched, Generation: 1, ClaimedAt: 1, Profile: writeIntrinsic}, StatusTimedOut, KeyToolTimeout, false},
		{"claimed, not replayable", ExpiryFacts{Kind: KindTool, Status: StatusDispatched, Generation: 1, ClaimedAt: 1, Profile: edit}, StatusUncertain, KeyToolUncertain, false},
		{"claimed, no profile", ExpiryFacts{Kind: KindTool, Status: StatusDispatched, Generation: 1, ClaimedAt: 1}, StatusUncertain, KeyToolUncertain, false},
		{"claimed, malformed profile", ExpiryFacts{Kind: KindTool, Status: StatusDispatched, Generation: 1, ClaimedAt: 1, Profile: []byte(`{"kind":"read_only"}`)}, StatusUncertain, KeyToolUncertain, false},
		{"ask await", ExpiryFacts{Kind: KindAwait, Status: StatusAwaitingInput}, StatusTimedOut, KeyAwaitTimeout, false},
		{"wait await", ExpiryFacts{Kind: KindAwait, Status: StatusDispatched}, StatusTimedOut, KeyAwaitTimeout, false},
		{"held approval", ExpiryFacts{Kind: KindTool, Status: StatusNeedsApproval, Profile: read}, StatusTimedOut, KeyApprovalExpired, false},
		{"model claimed", ExpiryFacts{Kind: KindModel, Status: StatusRunning, Generation: 1, Attempts: 1}, "", "", true},
		{"model third claim", ExpiryFacts{Kind: KindModel, Status: StatusRunning, Generation: 3, Attempts: 3}, StatusFailed, KeyAttemptBudgetSpent, false},
		// A claim whose instance was declared dead follows the same rule
		// (docs/operations.md#instance-liveness-and-takeover).
		{"model claimed, instance dead", ExpiryFacts{Kind: KindModel, Status: StatusRunning, Generation: 1, Attempts: 1, Lapsed: true}, "", "", true},
		{"model third claim, instance dead", ExpiryFacts{Kind: KindModel, Status: StatusRunning, Generation: 3, Attempts: 3, Lapsed: true}, StatusFailed, KeyAttemptBudgetSpent, false},
		{"claimed, read-only, instance dead", ExpiryFacts{Kind: KindTool, Status: StatusRunning, Generation: 1, ClaimedAt: 1, Profile: read, Lapsed: true}, StatusTimedOut, KeyToolTimeout, false},
		{"claimed, not replayable, instance dead", ExpiryFacts{Kind: KindTool, Status: StatusRunning, Generation: 1, ClaimedAt: 1, Profile: edit, Lapsed: true}, StatusUncertain, KeyToolUncertain, false},
		// A plugin's call whose instance was declared dead is replayed on a survivor's copy of
		// the plugin when its profile allows, for MaxPluginClaims claims in all.
		{"plugin's read-only, instance dead", ExpiryFacts{Kind: KindTool, Status: StatusDispatched, Generation: 1, ClaimedAt: 1, Profile: read, Lapsed: true, Plugin: true}, "", "", true},
		{"plugin's write intrinsic, instance dead", ExpiryFacts{Kind: KindTool, Status: StatusDispatched, Generation: 2, ClaimedAt: 1, Profile: writeIntrinsic, Lapsed: true, Plugin: true}, "", "", true},
		{"plugin's read-only, third claim, instance dead", ExpiryFacts{Kind: KindTool, Status: StatusDispatched, Generation: 3, ClaimedAt: 1, Profile: read, Lapsed: true, Plugin: true}, StatusTimedOut, KeyToolTimeout, false},
		{"plugin's not replayable, instance dead", ExpiryFacts{Kind: KindTool, Status: StatusDispatched, Generation: 1, ClaimedAt: 1, Profile: edit, Lapsed: true, Plugin: true}, StatusUncertain, KeyToolUncertain, false},
		{"plugin's read-only, deadline passed", ExpiryFacts{Kind: KindTool, Status: StatusDispatched, Generation: 1, ClaimedAt: 1, Profile: read, Plugin: true}, StatusTimedOut, KeyToolTimeout, false},
		{"plugin's never claimed, instance dead", ExpiryFacts{Kind: KindTool, Status: StatusDispatched, Profile: read, Lapsed: true, Plugin: true}, StatusTimedOut, KeyToolTimeout, false},
	}
	for _, c := range cases {
		x := ApplyExpiry(c.f)
		if x.Release != c.release || x.Status != c.status || x.Error.Key != c.key {
			t.Errorf("%s: got %+v, want status %q key %q release %v", c.name, x, c.status, c.key, c.release)
		}
	}
	x := ApplyExpiry(ExpiryFacts{Kind: KindTool, Status: StatusDispatched, Generation: 1, ClaimedAt: 1740821400300, TimeoutMS: 600000,
		ClaimedBy: "executor 1d2e", Profile: edit})
	if x.Error.Detail != "no commit within 600000 ms of the claim at 2025-03-01T09:30:00.300Z by executor 1d2e; the tool may have run" {
		t.Errorf("detail %q", x.Error.Detail)
	}
	x = ApplyExpiry(ExpiryFacts{Kind: KindTool, Status: StatusRunning, Generation: 1, ClaimedAt: 1740821400300, TimeoutMS: 600000,
		ClaimedBy: "kernel instance inst_0a1b", Profile: edit, Lapsed: true})
	if x.Error.Detail != "the claim at 2025-03-01T09:30:00.300Z by kernel instance inst_0a1b ended with that instance's heartbeat; the tool may have run" {
		t.Errorf("lapsed detail %q", x.Error.Detail)
	}
	x = ApplyExpiry(ExpiryFacts{Kind: KindTool, Status: StatusDispatched, Generation: 3, ClaimedAt: 1740821400300, TimeoutMS: 600000,
		ClaimedBy: "executor 1d2e on instance inst_0a1b", Profile: read, Lapsed: true, Plugin: true})
	if x.Error.Detail != "the claim at 2025-03-01T09:30:00.300Z by executor 1d2e on instance inst_0a1b ended with that instance's heartbeat; claimed 3 times without settling" {
		t.Errorf("a plugin's spent claims' detail %q", x.Error.Detail)
	}
	// A settlement at once, before the deadline, says why instead of a deadline.
	x = ApplyExpiry(ExpiryFacts{Kind: KindTool, Status: StatusDispatched, Generation: 1, ClaimedAt: 1740821400300, TimeoutMS: 600000,
		ClaimedBy: "executor 1d2e", Profile: edit, Early: "the plugin exited during the call"})
	if x.Status != StatusUncertain || x.Error.Detail != "the claim at 2025-03-01T09:30:00.300Z by executor 1d2e ended before its deadline: the plugin exited during the call; the tool may have run" {
		t.Errorf("early detail %q", x.Error.Detail)
	}
}
