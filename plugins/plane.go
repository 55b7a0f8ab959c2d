package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/refusal"
	"github.com/nexuskernel/nexus/sdk/toolprovider"
)

// ExecutorPlane is the part of the kernel the host uses: the same code paths HTTP executors
// reach (docs/development.md#the-plugin-host). core/executors implements it (PluginPlane) and the
// server hands that to the host.
type ExecutorPlane interface {
	// EnsureManaged creates or reuses the plugin's executor (kind tool_provider) by its
	// registration key and answers its public id, stable across restarts, reloads and upgrades.
	// A revoked managed executor is reactivated with the same id.
	EnsureManaged(ctx context.Context, m ManagedExecutor) (executorID string, err error)
	// Announce replaces the executor's announcement whole.
	Announce(ctx context.Context, executorID string, a announce.Announcement) error
	// SetPresence marks the executor online or offline.
	SetPresence(ctx context.Context, executorID string, online bool) error
	// Revoke revokes the executor: its dispatched rows fail executor_revoked.
	Revoke(ctx context.Context, executorID string) error
	// Subscribe opens the executor's work feed: coalesced news of its events that never falls
	// behind, open until the host closes it or it ends (WorkFeed).
	Subscribe(ctx context.Context, executorID string) (WorkFeed, error)
	// Inbox pages the executor's unclaimed rows after the cursor.
	Inbox(ctx context.Context, executorID, after string, limit int) (rows []InboxRow, next string, err error)
	// Claim claims one row: ErrAlreadyClaimed when another claimant won, ErrNotEligible when the
	// executor may not serve it.
	Claim(ctx context.Context, executorID, runID, taskKey string) (Claim, error)
	// ClaimActive re-reads a held claim: false once the row was settled, cancelled or passed
	// its deadline, or the claim is another's.
	ClaimActive(ctx context.Context, executorID string, c Claim) (bool, error)
	// StageCapture stages a file as the executor's own capture and answers its upload id.
	StageCapture(ctx context.Context, executorID, filename string, data []byte) (uploadID string, err error)
	// Commit commits the claim's result with the HTTP commit's validation. A refusal of the
	// result envelope's grammar (invalid_content, unsupported_content_kind,
	// too_many_content_blocks, unknown_result_upload, invalid_metadata, metadata_too_large,
	// result_too_large, invalid_title) or result_unstorable is a *refusal.Refusal (sdk/refusal)
	// of kind Unprocessable, the commit door's own; ErrClaimLost says the claim is no longer held
	// (cancelled, expired).
	Commit(ctx context.Context, executorID string, c Claim, body CommitBody) error
	// ExpireNow applies the expiry rule to the claim at once (a lost non-replayable call);
	// cause is why, said in the row's detail in place of a deadline (ExpiredPluginExited,
	// ExpiredAnswerLost, ExpiredReplaysSpent).
	ExpireNow(ctx context.Context, executorID string, c Claim, cause string) error
}

// Errors an ExecutorPlane answers that the host handles itself.
var (
	// ErrAlreadyClaimed: another instance claimed the row first; skipped silently.
	ErrAlreadyClaimed = errors.New("plugins: row already claimed")
	// ErrNotEligible: the executor may not serve the row; skipped silently.
	ErrNotEligible = errors.New("plugins: executor not eligible for the row")
	// ErrClaimLost: the claim is no longer held (work_canceled, deadline); the result is dropped.
	ErrClaimLost = errors.New("plugins: claim no longer held")
)

// CodeResultUnstorable closes the park itself (docs/api.md#the-executor-plane): the host commits
// nothing more.
const CodeResultUnstorable = refusal.CodeResultUnstorable

// ManagedExecutor is the executor the host registers for a plugin
// (docs/plugins.md#what-the-host-checks).
type ManagedExecutor struct {
	// RegistrationKey is "plugin:<catalog name>".
	RegistrationKey string
	// DisplayName is "plugin <catalog name>".
	DisplayName string
	// ManagedBy is {"plugin": "<catalog name>"}.
	ManagedBy map[string]string
	// Workspaces are the handles or public ids the executor may serve; empty means all.
	Workspaces []string
}

// WorkFeed is the executor's work events as the claim loop needs them: the rows work_available
// named since the last Take, each once, which the loop claims without reading the inbox, and
// each work_canceled kept once, up to a bound past which the feed says that events may have been
// missed and the loop reads the inbox and re-reads its claims. Publishing never waits for the
// reader, so a busy claim loop costs nothing but a coalesced wake-up. The feed ends (Done) only
// when the executor is revoked or the kernel shuts down; the claim loop opens another at once
// and reads the inbox.
type WorkFeed interface {
	// Wake receives a value when news is waiting.
	Wake() <-chan struct{}
	// Done is closed when the feed has ended.
	Done() <-chan struct{}
	// Take answers the news since the last Take and clears it.
	Take() WorkNews
	// Close ends the feed; it is safe to call more than once.
	Close()
}

// WorkNews is what a WorkFeed heard since the last Take.
type WorkNews struct {
	// Available: work_available arrived, or may have been missed.
	Available bool
	// Rows are the rows work_available named, each once: the claim loop claims them without
	// reading the inbox. A feed that names none with Available set asks for the inbox's read.
	Rows []WorkRef
	// Missed: events may have been missed; read the inbox, which lists every row.
	Missed bool
	// Canceled are the rows work_canceled named, each once.
	Canceled []WorkRef
	// CancelsLost: cancellations were dropped or may have been missed; re-read every claim
	// held (ClaimActive).
	CancelsLost bool
}

// WorkRef names a row.
type WorkRef struct {
	RunID   string
	TaskKey string
}

// InboxRow is one row of the executor's inbox.
type InboxRow struct {
	RunID    string
	TaskKey  string
	ToolName string
	// Waited is how long the row had been claimable when the inbox was read.
	Waited time.Duration
}

// Claim is a held claim and the row it covers.
type Claim struct {
	// Token is the claim token; the host never persists it.
	Token          string
	RunID          string
	TaskKey        string
	ToolName       string
	ToolCallID     string
	ToolAlias      string
	WorkspaceID    string
	ConversationID string
	// ToolInput is the row's tool_input, a JSON object.
	ToolInput json.RawMessage
	// MemoryBindings is the row's scope for memory wire names (docs/agent-tools.md#memory-and-skills).
	MemoryBindings []memory.Scope
	// EffectProfile is the profile frozen on the row; it decides replay after a crash.
	EffectProfile *announce.EffectProfile
	ClaimedAt     time.Time
	DeadlineAt    time.Time
	// Generation is the claim's generation: 1 on the row's first claim. A later one follows
	// claims that ended without a commit, released when the instance holding them died
	// (docs/operations.md#instance-liveness-and-takeover), so the call is a replay.
	Generation int64
}

// priorRuns is how many times the call may have run under earlier claims of its row.
func (c Claim) priorRuns() int {
	return int(max(c.Generation-1, 0))
}

// CommitBody is the result the host commits, in the terms of the result envelope
// (docs/api.md#the-executor-plane), as typed values: the plane commits them as they are, without
// writing JSON.
type CommitBody struct {
	// Outcome is OutcomeCompleted or OutcomeFailed; "" is completed.
	Outcome string
	// Blocks, when non-nil, are the content: text and resource_link blocks, a capture's link
	// already pointing at its staged upload. A block that is neither is refused invalid_content.
	Blocks []toolprovider.Block
	// Text is the content as one string when Blocks is nil; "" is a blank result.
	Text string
	// StructuredContent is kept verbatim ("null" and "false" included); nil omits it.
	StructuredContent json.RawMessage
	IsError           bool
	// Title is nil when the plugin sent none.
	Title    *string
	Metadata json.RawMessage
	// FailureDetail is the tool_failed detail of a failed outcome without content, at most
	// MaxFailureDetailBytes: the commit carries it as the content's text.
	FailureDetail string
}

// Commit outcomes.
const (
	OutcomeCompleted = "completed"
	OutcomeFailed    = "failed"
)
