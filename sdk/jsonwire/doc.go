// Package jsonwire is the project's one JSON toolkit: canonical JSON (docs/api.md#conventions) of
// a raw value (Canonical, which keeps a number too large for a double as written so that
// measuring never fails on a value the store accepts, and CanonicalValue, which refuses one, for
// what the kernel stores, measures or compares), the storability facts of a raw value (repeated
// keys; U+0000, unpaired surrogate escapes and bytes that are not UTF-8, which PostgreSQL cannot
// keep; numbers outside the double range), the minimal string and number encodings, and the
// splitting of objects and arrays into their members as written, without decoding; and Value, the
// order-preserving JSON value that declarations are compiled, stored and projected as (objects
// are ordered Field lists, numbers keep their literal text, one encoder writes the compact form
// the declaration rules measure), because a tool list is the front of every cached prompt
// prefix and neither map[string]any nor encoding/json may reorder or re-escape it.
//
// The announcement validator (sdk/announce), the result envelope, the run engine, the model
// layer and the doors all read and measure JSON through it, so every bound is measured the same
// way; no other package walks JSON bytes by hand. Inside it too there is one walker (jsonwire.go):
// Canonical, Scan, UnstorablePath, the splits, DecodeString and Decode all read through its
// tokens (strings, numbers, literals, and the containers' open, next and key steps), so they
// accept exactly the same texts and a failure names the same byte. It imports nothing from the
// module.
package jsonwire
