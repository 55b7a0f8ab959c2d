// Package client is the Go client of the Nexus agent API, for agent authors, runners and the
// nexus command line. It speaks only HTTP and JSON and imports nothing of the server, so a program
// built against the SDK alone can use it. Every refusal comes back as *Error with the server's
// stable word in Code.
package client
