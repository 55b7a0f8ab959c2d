package executors

import (
	"strconv"
	"time"

	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/steps"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/announce"
)

// CodeRateLimited is the refusal of a request over an executor's rate or concurrency limit
// (docs/api.md#the-executor-plane), answered 429 with a Retry-After header.
const CodeRateLimited = "rate_limited"

// Event words of the stream (docs/api.md#the-executor-plane).
const (
	EventWorkAvailable = announce.EventWorkAvailable
	EventWorkCanceled  = announce.EventWorkCanceled
	// KindToolCall is the only row kind this version pushes; clients skip others.
	KindToolCall = announce.RowKindToolCall
)

// Reasons of work_canceled (docs/api.md#the-executor-plane); clients treat an unknown word as a
// cancel.
const (
	ReasonRunCanceled  = runs.CancelRunCanceled
	ReasonTaskCanceled = runs.CancelTaskCanceled
	ReasonExpired      = "expired"
)

// Stream limits (docs/api.md#the-executor-plane, docs/api.md#limits).
const (
	// MaxStreams bounds the event streams one executor holds on an instance: a runner needs
	// one, a few more cover reconnects that overlap a dying connection, and each costs a
	// goroutine and a socket.
	MaxStreams = 8
	// StreamRetryAfter is the Retry-After of a refused ninth stream: the reconnection delay
	// the stream itself advises (retry: 3000), after which an overlapping stream has usually
	// closed.
	StreamRetryAfter = 3 * time.Second
	// ReconnectDelay is the stream's retry field, how long a client waits before reconnecting:
	// long enough that a restarting instance is not hammered by every runner at once, short
	// enough that a lost stream costs seconds of latency, never work.
	ReconnectDelay = 3 * time.Second
	// PingInterval spaces the stream's comment pings: under the 30 to 60 seconds after which
	// common proxies and load balancers cut an idle connection.
	PingInterval = 15 * time.Second
	// StreamBuffer is how many events a stream may fall behind before it is closed: the
	// executor reconnects and reads its inbox, which loses nothing, instead of the hub blocking
	// publishers on a slow reader or dropping events silently.
	StreamBuffer = 64
)

// ErrTooManyStreams is the refusal of a stream over MaxStreams (errors.Is matches it).
var ErrTooManyStreams = refusal.Newf(refusal.TooManyRequests, CodeRateLimited,
	"An executor may hold at most %d event streams at once; retry after one closes.", MaxStreams)

// RetryAfter is the Retry-After header value (whole seconds) of a refused stream.
func RetryAfter() string { return strconv.Itoa(int(StreamRetryAfter / time.Second)) }

// errHubClosed refuses a stream while the instance shuts down.
var errHubClosed = refusal.New(refusal.Unavailable, refusal.CodeUnavailable,
	"The server is shutting down; reconnect to another instance.")

// The refusal words of the inbox, claim, claim read, extend and commit doors
// (docs/api.md#the-executor-plane). They are contracts: clients
// match on them byte for byte.
const (
	CodeNotAddressedHere    = "not_addressed_here"
	CodeNotClaimableKind    = "not_claimable_kind"
	CodeTaskNotClaimable    = announce.CodeTaskNotClaimable
	CodeAlreadyClaimed      = announce.CodeAlreadyClaimed
	CodeNotEligible         = WordNotEligible
	CodeNotAuthorized       = refusal.CodeNotAuthorized
	CodeNotClaimant         = "not_claimant"
	CodeNotExtendable       = "not_extendable"
	CodeExtensionTooLong    = "extension_too_long"
	CodeTaskNotRunning      = "task_not_running"
	CodeStaleClaim          = "stale_claim"
	CodeInvalidTimeoutMS    = steps.CodeInvalidTimeoutMS
	CodeResultUnstorable    = envelope.CodeResultUnstorable
	CodeParameterInvalid    = refusal.CodeParameterInvalid
	CodeParameterMissing    = refusal.CodeParameterMissing
	CodeNotFound            = refusal.CodeNotFound
	CodeReservedNamespace   = announce.CodeReservedNamespace
	CodeInvalidAnnouncement = announce.CodeInvalidAnnouncement
	CodeValidationFailed    = refusal.CodeValidationFailed
)

// Row kinds and addressing roles as the executor plane serves them
// (docs/api.md#the-executor-plane).
const (
	RoleRunner       = store.ExecutorRunner
	RoleToolProvider = store.ExecutorToolProvider
)
