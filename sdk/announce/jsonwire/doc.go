// Package jsonwire is the one JSON walker of the wire doors: canonical JSON
// (docs/api.md#conventions), the storability facts of a raw value (repeated keys; U+0000, unpaired
// surrogate escapes and bytes that are not UTF-8, which PostgreSQL cannot keep), and the splitting
// of objects and arrays into their members as written. The announcement validator (sdk/announce)
// and the result envelope (core/envelope) both read bodies through it, so both measure bounds the
// same way. It imports nothing from the module.
package jsonwire
