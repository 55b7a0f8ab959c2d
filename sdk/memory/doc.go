// Package memory owns the memory family's semantics, once: the Provider interface a store
// implements, its plain request and response types and the sentinel errors that name every
// condition a store reports (and that cross the plugin wire as error kinds), the limits, the
// helpers that make every store agree (name and scope checks, edits, line splitting, pattern
// matching), and Engine, which turns a memory tool call into its exact result text, title and
// error flag over any Provider. The kernel runs the Engine over its built-in store and the plugin
// host over a memory plugin, so no store ever writes a model-facing word.
//
// It must not store anything itself, know HTTP, gRPC or the kernel's tables, or import anything
// from the project beyond sdk/announce, sdk/plugin and the SDK's internal wire packages.
package memory
