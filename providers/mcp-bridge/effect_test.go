package mcpbridge

import (
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuskernel/nexus/sdk/announce"
)

func TestEffectEveryHintCombination(t *testing.T) {
	vals := []*bool{nil, boolp(true), boolp(false)}
	for _, r := range vals {
		for _, d := range vals {
			for _, i := range vals {
				for _, o := range vals {
					a := &mcp.ToolAnnotations{DestructiveHint: d, OpenWorldHint: o}
					if r != nil {
						a.ReadOnlyHint = *r
					}
					if i != nil {
						a.IdempotentHint = *i
					}
					R, D, I, O := r != nil && *r, d == nil || *d, i != nil && *i, o == nil || *o
					want := announce.EffectProfile{Kind: "write", Destructive: D, EffectScope: "open", Idempotency: "none", Reconciliation: "none"}
					if R {
						want.Kind, want.Destructive = "read_only", false
					}
					if !O {
						want.EffectScope = "closed"
					}
					if R || I {
						want.Idempotency = "intrinsic"
					}
					got := effectOf(a, false)
					name := fmt.Sprintf("r=%v d=%v i=%v o=%v", show(r), show(d), show(i), show(o))
					if got != want {
						t.Errorf("%s: %+v, want %+v", name, got, want)
					}
					tl := announce.Tool{Name: "t", EffectProfile: announce.Announced(got)}
					if ref := announce.ValidatePlugin(announce.PluginKindToolProvider, announce.Announcement{Tools: []announce.Tool{tl}}); ref != nil {
						t.Errorf("%s: refused %v", name, ref)
					}
					if ign := effectOf(a, true); ign != (announce.EffectProfile{Kind: "write", Destructive: true, EffectScope: "open", Idempotency: "none", Reconciliation: "none"}) {
						t.Errorf("%s ignored: %+v", name, ign)
					}
				}
			}
		}
	}
	if effectOf(nil, false) != effectOf(&mcp.ToolAnnotations{}, false) {
		t.Error("no annotations differ from empty annotations")
	}
}

func boolp(b bool) *bool { return &b }

func show(b *bool) string {
	if b == nil {
		return "absent"
	}
	return fmt.Sprint(*b)
}
