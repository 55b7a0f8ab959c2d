// Package plugins is the plugin host: the catalog of plugin blocks from the server's HCL
// configuration, command discovery and checksum verification, launching plugins with
// hashicorp/go-plugin (handshake, AutoMTLS, no inherited environment), Describe and Configure,
// boundary enforcement with sdk/announce's one validator, the claim loop that makes each plugin a
// managed tool_provider executor, the supervisor (health, restart with backoff, circuit breaker,
// stderr into the log, parent-death cleanup), reload and restart, and the status the plugin
// routes serve. A StorageGuard the server fills admits each plugin's storage root against the
// other instances' before its executor serves, and holds a plugin whose root is not the one in
// use unready (docs/operations.md#several-instances). For a plugin at protocol 1.1 it follows the
// re-announce stream (a changed announcement is validated as at load and replaces the executor's
// whole, at most once a second) and settles a call whose answer the plugin reports lost as if the plugin had crashed
// during it, without a restart (docs/plugins.md#protocol-11).
//
// The claim loop wakes on a work feed that never closes for falling behind (WorkFeed: the rows
// work_available named, which it claims without reading the inbox, the cancellations, and a
// "read the inbox" when events were missed), reopens a feed that ends, and keeps a 30-second
// inbox poll as the safety net, counting in poll_found whatever the poll
// found that a wake-up should have announced (docs/plugins.md, "When a subscriber falls
// behind").
//
// It imports the SDK only. The executor plane it drives is the ExecutorPlane interface declared
// here and filled by the server with core/executors' PluginPlane, so a plugin's rows go through
// the same claim, commit and expiry code as an HTTP executor's; a result goes as typed values
// (CommitBody), never as JSON. It knows no HTTP and writes no
// model-facing text of its own beyond the failure details docs/development.md#the-plugin-host
// fixes.
package plugins
