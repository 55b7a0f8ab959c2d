// Package runner serves tools from any machine through the executor plane: it announces an
// executor's tools, opens its event stream, reads its inbox on every (re)connect, claims the
// rows its tools serve, runs them, keeps long calls alive with extends, and commits their
// results, retrying transport failures with the same claim token. A work_canceled event cancels
// the call it names. It is built on sdk/client alone, so a third party writes a runner with it
// and nothing of the server.
//
// It owns the loop, never a tool's meaning: a Tool's Handler decides what a call does and
// answers its result envelope (or an error, committed as a failed outcome). It keeps no state
// across restarts: the inbox is authoritative, and a call lost with the process settles at its
// deadline by the kernel's expiry rule.
package runner
