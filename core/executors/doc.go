// Package executors owns the executor plane's business logic (docs/api.md#the-executor-plane): the announcement door
// (whole-or-nothing through sdk/announce, the one validator, with the served-names table that
// addressing reads), the Announcements seam that routes Runner and pool rows (Addressing), the
// inbox, claim, claim read, extend and commit with every precondition in its specified order, the
// per-executor rate limits, revocation's effects on work, and the push hub, which holds the
// executors' event streams on this instance, fans work_available and work_canceled out to them and
// to every other instance through PostgreSQL NOTIFY, closes an executor's streams when it is
// revoked, and records the stream presence member discovery shows. Events are hints: the hub
// queues nothing for a disconnected executor and replays nothing, because the inbox stays
// authoritative. Besides the HTTP streams, which end when they fall behind, it publishes every
// executor event to the event feed (core/events) and serves feeds (feed.go), subscriptions to it,
// to in-process readers such as the plugin host: they name the rows announced and the rows
// cancelled, keep a bounded number of events, and never close for falling behind
// (docs/plugins.md, "When a subscriber falls behind"). It also keeps a workspace's tool provider override map (docs/api.md#the-memory-override: the
// door with its lock fence and refusal words, and the MemoryOverrides seam the run engine reads
// at a memory row's birth), and applies the expiry rule at once for a plugin host that lost a
// non-replayable call (ExpireClaim), and admits each instance's storage root of a plugin against
// the roots the other live instances serve from (PluginRoots, docs/operations.md#several-instances),
// refusing an override to a plugin whose roots are split (memory_root_split). PluginPlane is the plugin host's executor plane
// (plugins.ExecutorPlane) over all of this: a plugin's managed executor is one row per workspace
// it serves, its inbox pages every row (one cursor per row), and its result commits as the
// CommitRequest an HTTP body decodes to, built from the plugin's typed values without JSON.
//
// Each door's method takes the typed request this package declares (CommitRequest,
// ExtendRequest, AnnounceRequest, PutOverridesRequest), never a body or a header. The claim,
// extend and commit checks run in their documented order inside the method; the door's decoding
// refusal rides in the request's Invalid and is answered at the body's place.
//
// It must not know HTTP: core/httpapi routes the doors and writes the Server-Sent Events frames
// from the streams this package hands out. It never settles a row by itself: every change goes
// through the run engine's one transaction API (runs.Tx, opened by Engine.Write), so that readiness, the run
// lifecycle and wake-ups follow exactly as for the kernel's own settles, and the claim goes
// through the store's one claim primitive with a synchronous commit (its token leaves the process).
package executors
