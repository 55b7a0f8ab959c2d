// Package canonjson writes the canonical JSON of a value: object keys sorted by byte order, no
// insignificant whitespace, no HTML escaping, strings escaped minimally and numbers in their
// shortest round-trip form. Every byte bound the kernel puts on a JSON value (the tool input
// bound, the size estimate of a model request) and every comparison of two JSON bodies (an
// idempotent replay) is made on these bytes, so the same value always measures the same.
//
// It is a leaf: it imports only the standard library and holds no state. It never decides what a
// bound is or what a failure means for a caller; it only encodes, or says why it cannot.
package canonjson
