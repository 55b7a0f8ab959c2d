// Package packs holds the adaptation packs Nexus ships, as data: each file NAME.json is one
// pack, a list of alias entries that give kernel tools the spellings a model family was trained
// on, with a recut where a kernel text must say the alias's own parameter names
// (docs/agent-tools.md#adaptation-packs). sdk/client parses and renders them against the served
// catalog; this package only embeds the files and imports nothing of the module. A template a
// pack's recut anchors on is pinned by the contract pack beside it (contracts/nexus/v1/tools.json),
// so a kernel text change that moves an anchor fails a test instead of a client.
package packs
