package runs

import "time"

// Limits of docs/api.md#limits. Each is a contract number; the comment says why it has that value.
const (
	// MaxTaskKeyLen is the key grammar's bound; it keeps branch keys (C-r<n>t<i>) short.
	MaxTaskKeyLen = 64
	// MaxCallIDLen bounds a provider call id: providers themselves cap ids at 64-128
	// characters, and a longer one is garbage, not an id. A called name's bound is the tool
	// step's (steps.MaxToolNameLen), and a call's arguments' a tool step's input's
	// (steps.MaxToolInputBytes).
	MaxCallIDLen = 128
	// MaxCallsPerAnswer and MaxRoundsPerLineage stop a runaway model: 256 parallel calls or 256
	// rounds is beyond any useful answer and bounds the rows one lineage can create.
	MaxCallsPerAnswer   = 256
	MaxRoundsPerLineage = 256
	// MaxModelAttempts is how many claims a model task gets before it fails
	// attempt_budget_spent: a request that crashed a worker three times will crash the next.
	MaxModelAttempts = 3
	// MaxPluginClaims is how many claims a plugin's replayable call gets across instances that
	// die holding it: each death releases it to a survivor's copy of the plugin, but a call that
	// took three instances down with it will take the next one too, so the third death settles
	// it by its deadline's rule instead (docs/operations.md#instance-liveness-and-takeover). The
	// plugin host bounds a call's replays within one instance by the same number
	// (plugins.DefaultTimings.MaxAttempts).
	MaxPluginClaims = 3
	// MaxReasonBytes bounds a denial reason or a rule's reason copied into error.detail.
	MaxReasonBytes = 256
	// MaxAttentionKeys bounds the task keys one attention reason lists.
	MaxAttentionKeys = 32
	// ArgumentsDetailBytes bounds an invalid_tool_arguments detail: the parser's complaint, not
	// the arguments themselves.
	ArgumentsDetailBytes = 200
	// SweepBatch is how many expired rows one sweeper pass claims: a pass stays short, and the
	// next one follows at the sweep interval.
	SweepBatch = 100
)

// Durations of docs/development.md#how-the-kernel-runs-work.
const (
	// ToolParkDefault is an executor or kernel tool row's clock when nothing else sets one.
	ToolParkDefault = 10 * time.Minute
	// ApprovalHold is a held row's clock: a working day for a person to decide.
	ApprovalHold = 24 * time.Hour
	// IdempotencyTTL is how long a key is remembered.
	IdempotencyTTL = 24 * time.Hour
	// DefaultModelTimeout is kernel.model_timeout's default: a claimed model task's deadline.
	DefaultModelTimeout = 10 * time.Minute
	// DefaultSweepInterval is kernel.sweep_interval's default.
	DefaultSweepInterval = time.Second
	// WorkerPoll is how often an idle worker looks for work without a wake-up: wake-ups are
	// hints, and a lost one costs at most this much latency.
	WorkerPoll = 2 * time.Second
	// DefaultWorkers is kernel.workers' default.
	DefaultWorkers = 8
)
