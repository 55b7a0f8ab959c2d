package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/events"
	"github.com/nexuskernel/nexus/core/liveness"
	"github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/profiles"
	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/uploads"
	memsdk "github.com/nexuskernel/nexus/sdk/memory"
)

// Config is the kernel block of the server settings (docs/development.md#how-the-kernel-runs-work).
type Config struct {
	// Workers is the kernel worker pool of this instance; 0 means DefaultWorkers.
	Workers int
	// ModelTimeout is a claimed model task's deadline; 0 means DefaultModelTimeout.
	ModelTimeout time.Duration
	// SweepInterval is the sweeper's period; 0 means DefaultSweepInterval.
	SweepInterval time.Duration
	// Poll is the workers' fallback poll; 0 means WorkerPoll. Tests shorten nothing here.
	Poll time.Duration
	// HeartbeatInterval and HeartbeatTimeout are the instance's heartbeat period and how long
	// a silent instance lives (docs/operations.md#several-instances); 0 means
	// liveness.DefaultHeartbeatInterval and liveness.DefaultHeartbeatTimeout.
	HeartbeatInterval time.Duration
	HeartbeatTimeout  time.Duration
}

// MemoryOverrides answers the memory override rule at birth (docs/api.md#the-memory-override): the
// workspace's overriding provider, if any, and the run's resolved bindings for the pre-dispatch
// checks. The override door and the kernel memory store fill it; nil means no workspace overrides
// memory.
type MemoryOverrides interface {
	Override(ctx context.Context, q store.Querier, workspaceID int64) (executorPublicID string, ok bool, err error)
	Scopes(ctx context.Context, q store.Querier, run *store.Run) ([]memsdk.Scope, error)
	// Target answers the override target's standing in the workspace
	// (docs/api.md#the-memory-override).
	Target(ctx context.Context, q store.Querier, workspaceID int64, executorPublicID string) (TargetStanding, error)
}

// TargetStanding is an override target's standing in a workspace at a row's birth.
type TargetStanding int

const (
	// TargetActive: the executor is active and eligible; its announcement decides per verb.
	TargetActive TargetStanding = iota
	// TargetRevoked: the executor is revoked (or gone).
	TargetRevoked
	// TargetNotEligible: a plugin's managed executor whose catalog no longer serves the workspace.
	TargetNotEligible
)

// MemoryPrincipal is the run's memory principal (docs/agent-tools.md#memory-and-skills), for the
// override's pre-dispatch resolution outside the package.
func MemoryPrincipal(run *store.Run) Member { return memoryPrincipal(run) }

// Options build an Engine. Store, Models and Registry are required.
type Options struct {
	Store    *store.Store
	Models   *model.Catalog
	Registry *registry.Registry
	// Compiler is the declaration compiler a step's declaration is frozen with and a round's
	// frozen set read back with; nil means one over Registry.
	Compiler *declare.Compiler
	// Kernel runs kernel tool calls; nil fails every kernel row tool_not_served.
	Kernel KernelTools
	// Texts words the results the engine settles on a kernel tool's behalf (an expired or
	// canceled wait, a waited spawn still working); nil means Kernel's. New refuses an engine
	// with neither: one without kernel tools still settles the waits another instance placed.
	Texts ToolTexts
	// Conversations is the conversation side of the runs a conversation hosts: their turns and
	// the requests the conversation tools write. Required: New refuses an engine without it, which
	// could not follow a conversation-hosted run another instance or a door created.
	Conversations Conversations
	Signal        ExecutorSignal
	// Events is the event feed the engine publishes its member events and its kernel work to
	// after each commit (feed.go), and which it relays to the other instances on PostgreSQL from
	// Start; nil gives the engine a feed of its own.
	Events        *events.Bus
	Announcements Announcements
	Overrides     MemoryOverrides
	// Uploads checks, binds and reads input attachments; nil refuses every attachment
	// unknown_input_upload.
	Uploads *uploads.Service
	// Profiles reads answering agents' profiles, which turns freeze; nil means a service over
	// Store, Models and the compiler.
	Profiles *profiles.Service
	// Memory freezes a run's memory configuration at acceptance and resolves it for the kernel
	// skill documents a skill callable freezes (kernel memory's resolver); nil freezes the
	// wave-1 defaults assuming a controlling person, and reads no kernel skill documents.
	Memory *memory.Resolver
	Config Config
	// Now is the clock every deadline and the expiry rule read; nil means time.Now.
	Now func() time.Time
	Log hclog.Logger
	// OnClaim, when set, is called by a worker right after each claim, before any evaluation:
	// the wake-up benchmark (B8) measures commit-to-start latency with it.
	OnClaim func(c *store.Claimed)
	// Version is the program version this instance registers with
	// (docs/operations.md#several-instances); empty means "dev".
	Version string
}

// Engine is the run engine of one server instance.
type Engine struct {
	store    *store.Store
	models   *model.Catalog
	registry *registry.Registry
	compiler *declare.Compiler
	kernel   KernelTools
	texts    ToolTexts
	conv     Conversations
	signal   ExecutorSignal
	bus      *events.Bus
	// relayed sends the feed to the other instances and hears theirs (PostgreSQL); nil on SQLite.
	relayed  *events.Relay
	ann      Announcements
	over     MemoryOverrides
	mem      *memory.Resolver
	profiles *profiles.Service
	uploads  *uploads.Service
	cfg      Config
	now      func() time.Time
	log      hclog.Logger
	onClaim  func(c *store.Claimed)
	inst     *liveness.Instance

	// kick wakes idle workers; its capacity is the pool size so that every signal finds room
	// without blocking a committing writer.
	kick chan struct{}
	// cancels holds the contexts of in-flight evaluations by task id, so a stop can abandon
	// a provider call promptly.
	mu      sync.Mutex
	cancels map[int64]context.CancelFunc
	stop    func()
	wg      sync.WaitGroup
}

// WorkChannel is the base name of the executors' wake-up channel, the push hub's
// (docs/development.md#how-the-kernel-runs-work); the store scopes it. Kernel work crosses
// instances on the event feed's relay (events.RelayChannel).
const WorkChannel = "nexus_work"

// New builds an engine; Start runs its workers and sweeper.
func New(o Options) (*Engine, error) {
	if o.Store == nil || o.Models == nil || o.Registry == nil {
		return nil, errors.New("runs: Options.Store, Models and Registry are required")
	}
	if o.Texts == nil && o.Kernel != nil {
		o.Texts = o.Kernel
	}
	if o.Texts == nil {
		return nil, errors.New("runs: Options.Texts (or Kernel) is required: the engine words the waits it settles")
	}
	if o.Conversations == nil {
		return nil, errors.New("runs: Options.Conversations is required: the engine keeps the turns of the runs a conversation hosts")
	}
	if o.Config.Workers <= 0 {
		o.Config.Workers = DefaultWorkers
	}
	if o.Config.ModelTimeout <= 0 {
		o.Config.ModelTimeout = DefaultModelTimeout
	}
	if o.Config.SweepInterval <= 0 {
		o.Config.SweepInterval = DefaultSweepInterval
	}
	if o.Config.Poll <= 0 {
		o.Config.Poll = WorkerPoll
	}
	if o.Config.HeartbeatInterval <= 0 {
		o.Config.HeartbeatInterval = liveness.DefaultHeartbeatInterval
	}
	if o.Config.HeartbeatTimeout <= 0 {
		o.Config.HeartbeatTimeout = liveness.DefaultHeartbeatTimeout
	}
	if o.Config.HeartbeatTimeout < liveness.MinHeartbeatRenewals*o.Config.HeartbeatInterval {
		return nil, fmt.Errorf("runs: the heartbeat timeout must span at least %d heartbeat intervals", liveness.MinHeartbeatRenewals)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = hclog.NewNullLogger()
	}
	inst, err := liveness.New(o.Store, o.Log, o.Version, o.Now, o.Config.HeartbeatInterval, o.Config.HeartbeatTimeout)
	if err != nil {
		return nil, err
	}
	if o.Compiler == nil {
		if o.Compiler, err = declare.New(o.Registry); err != nil {
			return nil, err
		}
	}
	if o.Events == nil {
		o.Events = events.New()
	}
	if o.Profiles == nil {
		if o.Profiles, err = profiles.New(profiles.Options{Store: o.Store, Compiler: o.Compiler, Models: o.Models, Now: o.Now}); err != nil {
			return nil, err
		}
	}
	return &Engine{
		relayed: newRelay(o.Store, o.Events, o.Log),
		store:   o.Store, models: o.Models, registry: o.Registry, compiler: o.Compiler, kernel: o.Kernel, texts: o.Texts, conv: o.Conversations,
		signal: o.Signal, bus: o.Events, ann: o.Announcements, over: o.Overrides, mem: o.Memory, profiles: o.Profiles, uploads: o.Uploads, cfg: o.Config, now: o.Now, log: o.Log,
		kick:    make(chan struct{}, o.Config.Workers),
		cancels: map[int64]context.CancelFunc{}, onClaim: o.OnClaim, inst: inst,
	}, nil
}

func (e *Engine) nowMS() int64 { return e.now().UnixMilli() }

// effects collects what a transaction owes the world once it commits: kernel wake-ups,
// executor signals, evaluations to abandon.
type effects struct {
	// kernel counts kernel rows made runnable; one word to the other instances per transaction
	// is enough (work, published with the transaction's events), but as many workers of this
	// instance are woken as there are rows.
	kernel    int
	work      *events.KernelWork
	available []signalRow
	canceled  []signalRow
	abandon   []int64
	// events are the member events this transaction made true, in order (feed.go).
	events []events.MemberEvent
	// observe lists runs whose reply rows observe a turn this transaction ended; each is
	// advanced in its own transaction after the commit (docs/development.md#how-the-kernel-runs-work).
	observe []int64
	// active are executors this transaction found active (a Runner addressed at acceptance):
	// dispatch in the same transaction does not read their row again. It is no cache: it lives
	// and dies with one transaction attempt, and the executor row is not locked either way, so
	// a revocation committing between the two reads was already one committing just after the
	// second (its effects settle the rows it sees; a row parked after it expires by its clock).
	active map[string]bool
}

// noteActive records that this transaction found the executor active; a nil fx notes nothing.
func (fx *effects) noteActive(executorPublicID string) {
	if fx == nil || executorPublicID == "" {
		return
	}
	if fx.active == nil {
		fx.active = map[string]bool{}
	}
	fx.active[executorPublicID] = true
}

type signalRow struct {
	run, key, tool, reason string
	executors              []string
}

// wakeKernel records that a kernel row became runnable: after the commit this instance's workers
// are kicked and the others told by the event feed (events.KernelWork, relayed with the
// transaction's events), a hint whose loss costs a poll, never work
// (docs/development.md#how-the-kernel-runs-work).
func (e *Engine) wakeKernel(fx *effects, runPublicID, key string) {
	fx.kernel++
	if fx.kernel == 1 {
		fx.work = &events.KernelWork{Origin: e.inst.ID(), Run: runPublicID, TaskKey: key}
	}
}

// maxTxRetries bounds retries of a transaction the store refused for a conflict (store.ErrRetryable:
// a deadlock victim, docs/development.md#how-the-kernel-runs-work): a transaction that loses three
// times in a row is stuck in a pattern retrying will not break.
const maxTxRetries = 3

// write runs fn in one transaction and, once it commits, delivers its effects.
func (e *Engine) write(ctx context.Context, fn func(tx *store.Tx, fx *effects) error) error {
	return e.writeWith(ctx, e.store.Write, fn)
}

// writeWith is write on the store's write (store.Store.Write or WriteRelaxed).
func (e *Engine) writeWith(ctx context.Context, write func(context.Context, func(*store.Tx) error) error, fn func(tx *store.Tx, fx *effects) error) error {
	var fx *effects
	var err error
	for attempt := 0; attempt < maxTxRetries; attempt++ {
		fx = &effects{}
		err = write(ctx, func(tx *store.Tx) error { return fn(tx, fx) })
		if errors.Is(err, store.ErrRetryable) {
			continue
		}
		break
	}
	if err != nil {
		return err
	}
	e.afterCommit(ctx, fx)
	return nil
}

// afterCommit carries out a committed write's effects: signals and wake-ups, then the runs
// whose reply rows observe a turn the write ended, each advanced in its own transaction.
func (e *Engine) afterCommit(ctx context.Context, fx *effects) {
	e.deliver(fx)
	if len(fx.observe) > 0 {
		e.Advance(ctx, fx.observe)
	}
}

func (e *Engine) deliver(fx *effects) {
	if fx.kernel > 0 {
		e.Kick(fx.kernel)
	}
	if e.signal != nil {
		for _, s := range fx.available {
			e.signal.WorkAvailable(s.run, s.key, s.tool, s.executors)
		}
		for _, s := range fx.canceled {
			e.signal.WorkCanceled(s.run, s.key, s.executors, s.reason)
		}
	}
	if len(fx.events) > 0 || fx.work != nil {
		evs := make([]events.Event, 0, len(fx.events)+1)
		for _, ev := range fx.events {
			evs = append(evs, ev)
		}
		if fx.work != nil {
			evs = append(evs, *fx.work)
		}
		e.bus.PublishAll(evs)
	}
	if len(fx.abandon) > 0 {
		e.mu.Lock()
		for _, id := range fx.abandon {
			if c, ok := e.cancels[id]; ok {
				c()
			}
		}
		e.mu.Unlock()
	}
}

// Kick wakes up to n idle workers of this instance (the in-process notifier): one per row made
// runnable, so a single row does not send the whole pool racing for one claim.
func (e *Engine) Kick(n int) {
	for i := 0; i < n && i < cap(e.kick); i++ {
		select {
		case e.kick <- struct{}{}:
		default:
			return
		}
	}
}

func jsonText(v any) *string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("runs: marshal %T: %v", v, err))
	}
	s := string(b)
	return &s
}

// stored is JSON bytes as a row stores them; nil for none.
func stored(b []byte) *string {
	if b == nil {
		return nil
	}
	return new(string(b))
}

func timeOf(ms int64) time.Time { return time.UnixMilli(ms) }

func deref[T any](p *T) (v T) {
	if p != nil {
		v = *p
	}
	return v
}

// freezeMemory is the memory configuration a run freezes at acceptance
// (docs/agent-tools.md#memory-and-skills).
func (e *Engine) freezeMemory(ctx context.Context, q store.Querier, workspacePublicID, conversationPublicID string, principal Member) (string, error) {
	mc := memory.DefaultContext(conversationPublicID != "", true)
	var err error
	if e.mem != nil {
		if mc, err = e.mem.Freeze(ctx, q, memory.RunFacts{WorkspacePublicID: workspacePublicID, ConversationPublicID: conversationPublicID,
			Principal: memory.Principal{Kind: principal.Kind, PublicID: principal.PublicID}}); err != nil {
			return "", err
		}
	}
	b, err := mc.MarshalJSON()
	return string(b), err
}
