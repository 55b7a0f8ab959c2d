// Package toolprovider is what a third party builds a tool plugin with: the Provider interface
// (Announce, Call), the plain Call and Result types (the result envelope a commit carries, with
// text or content blocks, structured content, captures linked by resource_link), Mux for
// providers built from typed handlers, Serve for the plugin's main, and ClientPlugin, the
// adapter the host dispenses. Protocol 1.1 adds Reannouncer (with Revisions, a ready-made one)
// for a provider whose announcement changes, ErrOutcomeUnknown for a call whose answer was lost,
// Result.Failed, and Close of a provider that is an io.Closer before its process exits.
//
// It only serves and translates. It validates nothing a plugin announces or returns: the host
// checks announcements with sdk/announce and results with the executor plane's commit grammar,
// exactly as for an HTTP executor. It imports nothing from the project beyond the SDK.
package toolprovider
