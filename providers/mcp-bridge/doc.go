// Package mcpbridge serves the tools of Model Context Protocol servers as a Nexus tool
// provider. It is the library behind the nexus-mcp-bridge plugin (cmd/nexus-mcp-bridge): an
// operator lists MCP servers (a command over stdio, or a streamable HTTP URL) in the plugin's
// config, and the bridge connects to each as an MCP client with the official MCP Go SDK, lists
// its tools, announces them under names the announcement grammar accepts with effect profiles
// from the servers' hints, and answers each claimed call with tools/call, translating the
// result into the result envelope (docs/plugins.md#mcp-servers).
//
// The pieces, one file each: config.go decodes and checks the configuration; names.go maps MCP
// tool names to served names and back; effect.go maps tool annotations to effect profiles;
// catalog.go assembles the announcement (the servers sharing its bounds) and keeps the list
// cache; transport.go builds stdio commands and HTTP clients; frames.go speaks to a stdio server,
// bounding each of its messages so that one over the bound fails its call alone; server.go supervises one MCP server (connect, list, liveness,
// backoff, breaker); call.go sends a call and classifies its errors; result.go and
// resources.go translate a CallToolResult; bridge.go ties them into a toolprovider.Provider.
//
// A server that fails to start, crashes or hangs costs only its own tools: the others keep
// serving (each server runs at most its max_concurrency calls at once), and its last listed
// tools stay announced.
package mcpbridge
