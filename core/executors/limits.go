package executors

import "time"

// Limits of the executor plane's work doors (docs/api.md#limits).
const (
	// DefaultInboxPage and MaxInboxPage bound an inbox page: a runner reads its inbox once per
	// (re)connect, and 200 rows is more parked work than one executor can start at once.
	DefaultInboxPage = 50
	MaxInboxPage     = 200
	// MaxExtension bounds one extend: an hour keeps a stuck claimant from holding a row for
	// days by one call, while a claimant that is alive may extend again as often as it likes.
	MaxExtension = time.Hour
	// ClaimsPerMinute bounds claim POSTs per executor (per instance): a hundred a second is
	// far beyond any honest runner's pace and stops a spinning loop from monopolising the
	// writer.
	ClaimsPerMinute = 6000
	// ClaimReadsPerMinute bounds claim reads per executor: they are polls a runner needs only
	// now and then, ten a second at most.
	ClaimReadsPerMinute = 600
)
