// Package cli is the nexus command line: the server (serve, migrate, the break-glass token mint)
// and the operator commands that talk to a running server through sdk/client. cmd/nexus only
// calls Main; everything here is testable in-process.
package cli
