// Package wire is the part of the SDK's gRPC shims that every plugin kind shares: converting
// announcements and Info to and from the generated types, carrying typed errors as a gRPC status
// with an Error detail and reading them back, the Plugin service (Describe, Configure) on both
// sides, and the one go-plugin adapter every kind's Serve uses (Adapter: Info as served, the slot
// Configure fills, Close before exit; message bounds, panic recovery, the parent watchdog).
//
// It only translates and transports. It decides no rule: an announcement is validated by
// sdk/announce on the host, and memory or tool semantics live in their kind packages. It is
// internal so that no generated type ever reaches a plugin author.
package wire
