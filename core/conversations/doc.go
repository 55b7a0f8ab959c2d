// Package conversations owns what a conversation's history answers: the session history read and
// search that session_read and session_search serve (the visible turns, their prompt, steers and
// reply texts, a turn's persisted execution, the matching rule and its cursor), and the state of
// a conversation that kernel memory binds to (gone, read-only or writable).
//
// It reads the rows core/store keeps and the engine's words (core/runs); the engine never imports
// it, and the kernel's history tools (core/kernel) turn its refusals into their error results.
package conversations
