// Package memorytest is the memory conformance kit every memory.Provider passes identically
// (docs/plugins.md#testing-a-plugin-the-kits): RunProvider checks the store contract with errors
// compared by errors.Is, and RunTools drives the six tools end to end through memory.Engine with a
// fixed clock, comparing exact texts, error flags and titles. It also holds MemStore, the reference
// Provider held in memory, for tests of code that runs the Engine.
//
// It must not hold a store of its own beyond MemStore, import anything from the project beyond
// the SDK, or relax a case for a particular store: a store that needs an exception is wrong.
package memorytest
