// Package server wires the kernel together: it resolves the server settings (flags, environment,
// HCL file, defaults), opens and migrates the store, bootstraps an empty deployment, builds the
// services and the HTTP API, serves, and drains on shutdown. It owns no behaviour of its own
// beyond that order of things.
package server
