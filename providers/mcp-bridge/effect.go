package mcpbridge

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuskernel/nexus/sdk/announce"
)

// effectOf maps a tool's MCP annotations to an effect profile (docs/plugins.md#effect-profiles).
// Absent hints take MCP's defaults: not read-only, destructive, not idempotent, open world. So
// a tool with no annotations is the most effectful profile, whose lost call settles uncertain.
// The bridge never claims pure (MCP cannot say a tool ignores all state), nor keyed or lookup
// (it has no idempotency key to pass and cannot look an effect up).
func effectOf(a *mcp.ToolAnnotations, ignore bool) announce.EffectProfile {
	readOnly, destructive, idempotent, open := false, true, false, true
	if a != nil && !ignore {
		readOnly = a.ReadOnlyHint
		idempotent = a.IdempotentHint
		if a.DestructiveHint != nil {
			destructive = *a.DestructiveHint
		}
		if a.OpenWorldHint != nil {
			open = *a.OpenWorldHint
		}
	}
	p := announce.EffectProfile{
		Kind:           announce.KindWrite,
		Destructive:    destructive,
		EffectScope:    announce.ScopeOpen,
		Idempotency:    announce.IdempotencyNone,
		Reconciliation: announce.ReconciliationNone,
	}
	if readOnly {
		// destructiveHint is meaningful only for writing tools.
		p.Kind, p.Destructive = announce.KindReadOnly, false
	}
	if !open {
		p.EffectScope = announce.ScopeClosed
	}
	if readOnly || idempotent {
		p.Idempotency = announce.IdempotencyIntrinsic
	}
	return p
}
