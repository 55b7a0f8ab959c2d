// Package archtest holds the tests that keep the repository's shape: the dependency directions of
// docs/development.md#package-layout, read from `go list -deps`. It has no code of its own.
package archtest
