# A settings file that loads the plugin built in this directory (docs/plugins.md walks through it):
#
#   (cd examples/tool-plugin && go build -o nexus-wordcount .)
#   bin/nexus serve --config examples/tool-plugin/nexus.hcl
#
# A command with a slash is relative to this file; a bare name is looked up in the plugin
# directories and beside bin/nexus, never through $PATH.
plugin "wordcount" {
  kind    = "tool_provider"
  command = "./nexus-wordcount"
  # sha256 = "…"   # pin the binary: nexus plugins hash examples/tool-plugin/nexus-wordcount
  config = {
    max_chars = 20000
  }
}
