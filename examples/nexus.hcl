# The sample settings file `make run` serves with (make run CONFIG= serves without one).
# Every attribute is optional; docs/operations.md lists them all, docs/plugins.md the plugin block.
# Relative paths are relative to this file.

# The two plugins built beside bin/nexus. A plugin's command is a bare name looked up in the
# plugin directories, then in the directory of the nexus binary, never through $PATH.

# Memory on the file system: one file per document. It serves no workspace until one opts in:
#   nexus memory override set --plugin memory-fs
plugin "memory-fs" {
  kind    = "memory"
  command = "nexus-memory-fs"
  # config = { root = "/var/lib/nexus/memory" }   # default: <data-dir>/plugins/memory-fs
}

# A small deterministic tool provider: example_echo, example_stats, example_report and
# example_control, served to every workspace.
plugin "tools-example" {
  kind    = "tool_provider"
  command = "nexus-tools-example"
}
