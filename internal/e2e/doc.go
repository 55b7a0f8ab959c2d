// Package e2e holds the end-to-end tests of the run engine: real servers (in-process, or a
// subprocess that a test kills with SIGKILL) on each store, driven over HTTP with the mock
// model. It has no code of its own.
package e2e
