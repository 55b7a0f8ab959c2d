// Command nexus is the Nexus server and its command line: `nexus serve` runs the kernel, the
// other commands administer it. It only wires internal/cli.
package main
