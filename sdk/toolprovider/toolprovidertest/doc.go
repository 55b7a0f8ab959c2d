// Package toolprovidertest is the conformance kit for tool providers: CheckAnnouncement runs
// the host's own boundary validation (announce.ValidatePlugin) on a provider's announcement,
// RunGolden drives calls from golden files and compares every result field byte for byte
// (captures included), and OverGRPC puts a provider behind the real gRPC shims in process, so
// the same golden files prove the wire.
//
// It holds no provider of its own and relaxes nothing for a particular provider; it imports
// nothing from the project beyond the SDK.
package toolprovidertest
