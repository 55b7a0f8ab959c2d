// Package client is the Go client of the Nexus agent API, for agent authors, runners and the
// nexus command line. It speaks only HTTP and JSON and imports nothing of the server, so a program
// built against the SDK alone can use it. Every refusal comes back as *Error with the server's
// stable word in Code.
//
// It also holds the recut helper of adaptation packs (ApplyRecut, AliasSpec.Entry): an alias's
// description built by one anchored edit of the kernel's served template, applied here on the
// client, never sent to the kernel, and failing with *AnchorMoved instead of drifting when the
// kernel re-cuts its text. The adaptation packs Nexus ships (contracts/nexus/v1/packs) are
// applied here too: ShippedPack reads one, Client.PackEntries renders it against the served
// catalog, and Pack.Apply puts its aliases into a declaration (docs/agent-tools.md#adaptation-packs).
package client
