// Package jsonv is the order-preserving JSON value that declarations are compiled, stored and
// projected as: objects are ordered key/value lists, numbers keep their literal text, and the
// one encoder writes the compact form the declaration rules measure and store (no insignificant
// whitespace, no HTML escaping, non-ASCII as UTF-8). Equal compares values (key order ignored,
// numbers by numeric value).
//
// It exists because a tool list is the front of every cached prompt prefix: Go's
// map[string]any would reorder keys and encoding/json would escape characters, so neither may
// touch a stored or projected declaration. The package is pure and imports only the standard
// library; it never decides what a value means.
package jsonv
