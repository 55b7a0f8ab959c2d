package runs

import (
	"encoding/json"
	"fmt"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/announce"
)

// Expiry is what the expiry rule does to one row whose deadline passed
// (docs/development.md#how-the-kernel-runs-work).
type Expiry struct {
	// Release is set for a claimed model task: the claim is cleared and the row stays running
	// for another attempt, unless its attempts are spent (then Status and Error are set). It is
	// set too for a replayable call a dead instance's plugin held: the claim is cleared and the
	// row stays dispatched, its park's clock restarted, for a survivor's copy of the plugin.
	Release bool
	Status  string
	Error   TaskError
}

// ExpiryFacts are the row facts the rule reads.
type ExpiryFacts struct {
	Kind       string
	Status     string
	Generation int64
	Attempts   int64
	// Profile is the frozen effect profile as stored; nil or malformed is not replayable.
	Profile   []byte
	TimeoutMS int64
	// ClaimedAt is the current claim's time, 0 when unclaimed; ClaimedBy names the claimant in
	// the detail ("kernel" or "executor <id>").
	ClaimedAt int64
	ClaimedBy string
	Deadline  int64
	// Lapsed is set when the claim ends because its instance was declared dead, before the
	// deadline (docs/operations.md#several-instances).
	Lapsed bool
	// Plugin is set when the claim is one a plugin's host made for its executor on the lapsed
	// instance (docs/operations.md#instance-liveness-and-takeover): the survivors run copies of
	// the plugin, so a replayable call is released for one of them to call again.
	Plugin bool
	// Early is why the claim ends before its deadline (a plugin that exited): the detail says it.
	Early string
}

// ApplyExpiry is the expiry rule, and the only one: a tool row never re-queues itself.
func ApplyExpiry(f ExpiryFacts) Expiry {
	switch {
	case f.Status == StatusNeedsApproval:
		return Expiry{Status: StatusTimedOut, Error: TaskError{Key: KeyApprovalExpired,
			Detail: fmt.Sprintf("no decision before %s", store.FormatMillis(f.Deadline))}}
	case f.Kind == KindAwait:
		return Expiry{Status: StatusTimedOut, Error: TaskError{Key: KeyAwaitTimeout,
			Detail: fmt.Sprintf("no answer before %s", store.FormatMillis(f.Deadline))}}
	case f.Kind == KindModel:
		if f.Attempts >= MaxModelAttempts {
			return Expiry{Status: StatusFailed, Error: TaskError{Key: KeyAttemptBudgetSpent,
				Detail: fmt.Sprintf("claimed %d times without settling", f.Attempts)}}
		}
		return Expiry{Release: true}
	}
	if f.Generation == 0 || f.ClaimedAt == 0 {
		return Expiry{Status: StatusTimedOut, Error: TaskError{Key: KeyToolTimeout,
			Detail: fmt.Sprintf("not claimed within %d ms of dispatch", f.TimeoutMS)}}
	}
	detail := fmt.Sprintf("no commit within %d ms of the claim at %s by %s", f.TimeoutMS, store.FormatMillis(f.ClaimedAt), f.ClaimedBy)
	if f.Lapsed {
		detail = fmt.Sprintf("the claim at %s by %s ended with that instance's heartbeat", store.FormatMillis(f.ClaimedAt), f.ClaimedBy)
	}
	if f.Early != "" {
		detail = fmt.Sprintf("the claim at %s by %s ended before its deadline: %s", store.FormatMillis(f.ClaimedAt), f.ClaimedBy, f.Early)
	}
	if replayable(f.Profile) {
		if f.Lapsed && f.Plugin {
			// The plugin died with its instance, as a crashed plugin's replayable call is
			// replayed (docs/plugins.md#crashes): released for a survivor's copy of the plugin,
			// while the row has claims left.
			if f.Generation < MaxPluginClaims {
				return Expiry{Release: true}
			}
			detail += fmt.Sprintf("; claimed %d times without settling", f.Generation)
		}
		return Expiry{Status: StatusTimedOut, Error: TaskError{Key: KeyToolTimeout, Detail: detail}}
	}
	return Expiry{Status: StatusUncertain, Error: TaskError{Key: KeyToolUncertain, Detail: detail + "; the tool may have run"}}
}

// replayable reads a stored profile (the five keys, perhaps timeout_ms) with the registry's
// replayable rule; anything unreadable is not replayable.
func replayable(stored []byte) bool {
	if len(stored) == 0 {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(stored, &m) != nil {
		return false
	}
	delete(m, "timeout_ms")
	five, err := json.Marshal(m)
	if err != nil {
		return false
	}
	p, err := announce.ParseEffectProfile(five)
	if err != nil {
		return false
	}
	return announce.Replayable(&p)
}
