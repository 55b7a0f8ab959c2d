package projection

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// TestOpenRound: a round's stored set and catalog read back to the same offer, skills block and
// frozen skills as projecting them directly; native deferral gets its own offer, every kernel-mode
// target the zero target's; empty stored bytes are the empty set.
func TestOpenRound(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	set, err := c.Compile([]byte(`[{"name":"skill","canonical":"nexus.skill.load"},{"type":"function","function":{"name":"build_logs","parameters":{"type":"object"}},"defer_loading":true}]`))
	if err != nil {
		t.Fatal(err)
	}
	cat := declare.SkillCatalog{{Callable: "skill", Name: "release", Description: "How we release.", Source: declare.SourceWorkspace}}
	catBytes, _ := cat.MarshalJSON()
	r, err := Open(c, set.Bytes(), catBytes)
	if err != nil {
		t.Fatal(err)
	}
	p := Project(set, cat)
	kernel := r.Offered(Target{})
	if got, want := string(jsonwire.Array(rawValues(t, kernel.Tools)...).Encode()), string(jsonwire.Array(p.Tools...).Encode()); got != want || kernel.ToolSearch != "" {
		t.Fatalf("kernel offer %s %q\nwant %s", got, kernel.ToolSearch, want)
	}
	native := r.Offered(Target{NativeSearch: "bm25"})
	if native.ToolSearch != "bm25" || len(native.Tools) != 2 || !strings.Contains(string(native.Tools[0]), `"defer_loading":true`) {
		t.Fatalf("native offer %+v", native)
	}
	block, ok := SkillsBlock(set, p, cat)
	if !ok || r.SkillsBlock() != block {
		t.Fatalf("skills block %q, want %q", r.SkillsBlock(), block)
	}
	if e, ok := r.FrozenSkill("skill", "release"); !ok || e.Description != "How we release." {
		t.Fatalf("frozen skill %+v %v", e, ok)
	}
	if _, ok := r.FrozenSkill("skill", "other"); ok {
		t.Fatal("a skill the catalog does not hold was found")
	}
	if r.Set().Len() != 2 {
		t.Fatalf("set %s", r.Set().Bytes())
	}
	// Offers are safe to ask for from several goroutines.
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if o := r.Offered(Target{NativeSearch: "regex"}); o.ToolSearch != "regex" {
				t.Errorf("regex offer %+v", o)
			}
		}()
	}
	wg.Wait()
	empty, err := Open(c, nil, nil)
	if err != nil || empty.Set().Len() != 0 || len(empty.Offered(Target{}).Tools) != 0 || empty.SkillsBlock() != "" {
		t.Fatalf("empty round %+v %v", empty, err)
	}
	if _, err := Open(c, []byte(`{}`), nil); err == nil {
		t.Fatal("a stored set that does not compile opened")
	}
	if _, err := Open(c, nil, []byte(`{`)); err == nil {
		t.Fatal("a stored catalog that does not decode opened")
	}
}

func rawValues(t *testing.T, raws []json.RawMessage) []jsonwire.Value {
	t.Helper()
	out := make([]jsonwire.Value, len(raws))
	for i, b := range raws {
		v, err := jsonwire.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = v
	}
	return out
}
