// Package testserver starts a real Nexus server for end-to-end tests: in-process (fast, shares the
// race detector) or as a subprocess of the real command line (for signals and for killing the
// process mid-work). Either way the server runs on a real store: SQLite in a temporary data
// directory, or a fresh PostgreSQL schema.
//
// A test package that uses subprocesses calls Main from its TestMain, so that the test binary can
// re-execute itself as `nexus`, the way go-plugin's own tests run plugins.
package testserver
