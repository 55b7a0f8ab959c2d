package profiles

import (
	"testing"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/declare/declaretest"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// FuzzProfileReadBack checks the profile door's validation on arbitrary configuration objects:
// it never panics, every refusal names a field of the configuration, and every configuration
// it accepts reads back in a form that validates again to the same read-back, byte for byte
// (the idempotence of a stored profile). The store is not needed: validation and the stored
// form are pure.
func FuzzProfileReadBack(f *testing.F) {
	for _, seed := range []string{
		`{}`,
		`{"tool_definitions":[{"type":"function","function":{"name":"Agent"},"canonical":"nexus.graph.delegate_task","params":{"run_in_background":{"maps_to":"wait","invert":true,"description":"d"}}}],"kernel_tools":["nexus.graph.wait"],"approval_mode":"rules"}`,
		`{"runner_executor_public_ids":["01900000-0000-7000-8000-0000000000AB"],"runner_tool_names":[],"instructions":"<b>\u2028"}`,
		`{"approval_rules":[{"tool":"wait","verdict":"allow","path":"a","match":"*"}],"default_model":"mock/scripted"}`,
		`{"tool_definitions":[{"type":"function","name":"grep","route":{"kind":"runner","runner_executor_public_id":"01900000-0000-7000-8000-000000000051","tool_name":"grep"}}],"approval_mode":"ask"}`,
		`{"kernel_tools":[],"kernel_tools":[]}`,
		`{"approval_mode":"ask","instructions":null,"default_model":"x/y"}`,
	} {
		f.Add(seed)
	}
	c, err := declare.New(declaretest.NewRegistry())
	if err != nil {
		f.Fatal(err)
	}
	s := &Service{compiler: c, models: model.MustBuiltin()}
	fields := map[string]bool{}
	for _, name := range append(append([]string(nil), sourceFields...), FieldApprovalMode, FieldApprovalRules, FieldDefaultModel, FieldInstructions) {
		fields[name] = true
	}
	f.Fuzz(func(t *testing.T, raw string) {
		cfg, err := jsonwire.DecodeText(raw)
		if err != nil || !cfg.IsObject() {
			return
		}
		p, err := s.validate(cfg)
		if err != nil {
			if r := declaretest.RefusalOf(t, err); !fields[r.Field] {
				t.Fatalf("not a field refusal: %#v", err)
			}
			return
		}
		first := readBackOf(t, p)
		again, err := jsonwire.Decode(first)
		if err != nil {
			t.Fatalf("read-back is not JSON: %v\n%s", err, first)
		}
		p2, err := s.validate(again)
		if err != nil {
			t.Fatalf("the read-back is refused: %v\n%s", err, first)
		}
		if second := readBackOf(t, p2); string(second) != string(first) {
			t.Fatalf("re-declaring changed the read-back:\n%s\n%s", first, second)
		}
	})
}

func readBackOf(t *testing.T, p *proposal) []byte {
	t.Helper()
	c, err := configurationOf(p.row(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
