// Package mcpbridgetest holds the fixture MCP server the bridge's tests run: built on the MCP
// Go SDK, in process over in-memory transports or streamable HTTP, or as a subprocess of the
// test binary over stdio (MaybeServe, called from TestMain), so no Node.js is needed.
package mcpbridgetest
