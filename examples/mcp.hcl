# MCP servers as tools: the nexus-mcp-bridge plugin starts or dials each server listed in its
# config, lists its tools and serves them under "<server>_<tool>" (docs/plugins.md#mcp-servers).
# Serve it with: nexus serve --config examples/mcp.hcl
#
# A server that cannot start here (no Node.js, no network) costs only its own tools: the plugin
# still becomes ready, and retries the server with backoff.
plugin "mcp" {
  kind            = "tool_provider"
  command         = "nexus-mcp-bridge"
  max_concurrency = 16
  config = {
    servers = [
      {
        # stdio: a command the bridge starts; install the package first with
        #   npm install --prefix /opt/mcp @modelcontextprotocol/server-filesystem
        name            = "fs"
        command         = "node"
        args            = ["/opt/mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "/srv/shared"]
        deny            = ["move_file"]
        connect_timeout = "3s"
        tools = {
          "write_file" = { timeout_ms = 30000 }
        }
      },
      {
        # streamable HTTP: the secret comes from the server's environment, not this file.
        name            = "tickets"
        url             = "https://mcp.tickets.example/mcp"
        headers         = { Authorization = "Bearer ${env("TICKETS_MCP_TOKEN")}" }
        allow           = ["search_*", "get_ticket", "create_ticket"]
        connect_timeout = "3s"
        tools = {
          "create_ticket"  = { name = "ticket_create" }
          "search_tickets" = {
            effect = { kind = "read_only", destructive = false, effect_scope = "open",
                       idempotency = "intrinsic", reconciliation = "none" }
          }
        }
      },
    ]
  }
}
