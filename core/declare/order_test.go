package declare

import (
	"strings"
	"testing"
)

// TestCheckOrder pins the order of docs/agent-tools.md#declaration-refusals: each input fails two
// adjacent checks, and the earlier must win. Moving a check makes one of these fail.
func TestCheckOrder(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	const agent = `{"type":"function","function":{"name":"Agent"},"canonical":"nexus.graph.delegate_task"`
	huge := strings.Repeat("x", MaxDeclarationBytes)
	cases := []struct {
		name, list, word, path string
	}{
		{"L1 before L2", `{"a":1,"a":2}`, "invalid", "tool_definitions"},
		{"L2 before L3", `[{"type":"function","name":"a","description":"` + huge + `"}, 5]`, "invalid", "tool_definitions[1]"},
		{"L2 repeated key before L3", `[{"type":"function","name":"a","description":"` + huge + `","parameters":{"k":1,"k":2}}]`, "invalid", "tool_definitions[0]"},
		{"L3 before D", `[{"type":"function","name":"a","description":"` + huge + `"},{"type":"function","name":"a"}]`, "content_too_large", "tool_definitions"},
		{"D before E", `[{"type":"function","name":"a","x":1},{"type":"function","name":"a"}]`, "duplicate_tool_name", "tool_definitions[1]"},
		{"E in authored order", `[{"type":"function","name":"a","route":{"kind":"mcp"}},{"name":"wait"}]`, "invalid_tool_route", "tool_definitions[0].route"},
		{"E1 before A", `[{"name":"x","canonical":"acme.fs.read","defer_loading":"yes"}]`, "invalid", "tool_definitions[0].defer_loading"},
		{"E1 before P", `[{"name":"wait","defer_loading":1}]`, "invalid", "tool_definitions[0].defer_loading"},
		{"P1 before P2", `[{"name":"wait","parameters":{}}]`, "kernel_tool_redefined", "tool_definitions[0]"},
		{"P2 before P3", `[{"type":"tool","name":"a","extra":1}]`, "invalid", "tool_definitions[0].type"},
		{"P3 before P4", `[{"type":"function","name":"a","extra":1,"route":{"kind":"mcp"}}]`, "invalid", "tool_definitions[0].extra"},
		{"P3 keys before name", `[{"type":"function","function":{"extra":1}}]`, "invalid", "tool_definitions[0].function.extra"},
		{"P3 smallest key first", `[{"type":"function","name":"a","zeta":1,"alpha":1}]`, "invalid", "tool_definitions[0].alpha"},
		{"route 1 before 2", `[{"type":"function","name":"a","route":{"kind":"mcp","tool_name":"read"}}]`, "invalid_tool_route", "tool_definitions[0].route"},
		{"route 1 keys before 2", `[{"type":"function","name":"a","route":{"kind":"runner","tool_name":"read","x":1}}]`, "invalid_tool_route", "tool_definitions[0].route"},
		{"route 2 before 3", `[{"type":"function","name":"a","route":{"kind":"runner"}}]`, "runner_target_required", "tool_definitions[0].route"},
		{"route 3 before 4", `[{"type":"function","name":"a","route":{"kind":"runner","runner_executor_public_id":null}}]`, "invalid_tool_route", "tool_definitions[0].route.runner_executor_public_id"},
		{"route 4 before 5", `[{"type":"function","name":"a","route":{"kind":"runner","runner_executor_public_id":"` + runner51 + `","tool_name":""}}]`, "invalid_tool_route", "tool_definitions[0].route.tool_name"},
		{"A1 before A2", `[{"canonical":"nexus.graph.wait","extra":1}]`, "invalid", "tool_definitions[0].extra"},
		{"A1 type before function", `[{"type":"x","function":5,"canonical":"wait"}]`, "invalid", "tool_definitions[0].type"},
		{"A1 function before both names", `[{"function":5,"name":"a","canonical":"wait"}]`, "invalid", "tool_definitions[0].function"},
		{"A2 before A3", `[{"function":{},"canonical":"acme.fs.read"}]`, "invalid", "tool_definitions[0].function.name"},
		{"A3 before A4", `[{"name":"wait","canonical":"acme.fs.read"}]`, "alias_canonical_unknown", "tool_definitions[0].canonical"},
		{"A4 before A5", `[{"name":"delegate_task","canonical":"wait","description":""}]`, "alias_name_reserved", "tool_definitions[0].name"},
		{"A5 before A6", `[{"name":"W","canonical":"wait","description":"","omit":5}]`, "invalid", "tool_definitions[0].description"},
		{"A6 before A7", `[{"name":"W","canonical":"wait","omit":["nothing","nothing"]}]`, "invalid", "tool_definitions[0].omit"},
		{"A7 before A8", `[{"name":"W","canonical":"wait","omit":["nothing"],"params":5}]`, "alias_param_unknown", "tool_definitions[0].omit[0]"},
		{"A8 before A9", `[` + agent + `,"params":{"a":{"maps_to":"nope","invert":"yes"}}}]`, "invalid", "tool_definitions[0].params.a.invert"},
		{"A8 on every key before A9", `[` + agent + `,"params":{"a":{"maps_to":"nope"},"b":{"maps_to":"wait","invert":"x"}}}]`, "invalid", "tool_definitions[0].params.b.invert"},
		{"A9 before A10", `[` + agent + `,"params":{"c":{"maps_to":"wait"},"b":{"maps_to":"wait"},"d":{"maps_to":"nope"}}}]`, "alias_param_unknown", "tool_definitions[0].params.d.maps_to"},
		{"A10 before A11", `[` + agent + `,"params":{"prompt":{"maps_to":"wait"},"x":{"maps_to":"wait"}}}]`, "alias_param_unknown", "tool_definitions[0].params.x.maps_to"},
		{"A11 before A12", `[` + agent + `,"params":{"prompt":{"maps_to":"model","invert":true,"description":"d"}}}]`, "alias_param_unknown", "tool_definitions[0].params.prompt"},
		{"A12 before A13", `[` + agent + `,"params":{"text":{"maps_to":"prompt","invert":true}}}]`, "alias_invert_needs_boolean", "tool_definitions[0].params.text.invert"},
		{"A13 before A14", `[{"type":"function","function":{"name":"Agent","description":"mine"},"canonical":"delegate_task","params":{"bg":{"maps_to":"wait","invert":true}}}]`, "alias_param_description_required", "tool_definitions[0].params.bg"},
		{"A8 key grammar before spec shape", `[` + agent + `,"params":{"":5}}]`, "invalid", "tool_definitions[0].params."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := c.Compile([]byte(tc.list))
			r := refusalOf(t, err)
			if r.Word != tc.word || r.Path != tc.path {
				t.Errorf("got %s at %s, want %s at %s", r.Word, r.Path, tc.word, tc.path)
			}
		})
	}
}

// TestRefusalIgnoresKeyOrder: the refusal of a params map, or of an entry with several
// unknown keys, is the same whatever order the keys arrived in.
func TestRefusalIgnoresKeyOrder(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	pairs := [][2]string{
		{
			`[{"name":"A","canonical":"delegate_task","params":{"b":{"maps_to":"wait"},"a":{"maps_to":"wait"}}}]`,
			`[{"name":"A","canonical":"delegate_task","params":{"a":{"maps_to":"wait"},"b":{"maps_to":"wait"}}}]`,
		},
		{
			`[{"name":"A","canonical":"delegate_task","params":{"z":{"maps_to":"nope"},"y":{"maps_to":"prompt","invert":"x"}}}]`,
			`[{"name":"A","canonical":"delegate_task","params":{"y":{"maps_to":"prompt","invert":"x"},"z":{"maps_to":"nope"}}}]`,
		},
		{
			`[{"type":"function","name":"a","zz":1,"aa":2}]`,
			`[{"type":"function","aa":2,"name":"a","zz":1}]`,
		},
	}
	for _, p := range pairs {
		_, e1 := c.Compile([]byte(p[0]))
		_, e2 := c.Compile([]byte(p[1]))
		r1, r2 := refusalOf(t, e1), refusalOf(t, e2)
		if r1.Word != r2.Word || r1.Path != r2.Path {
			t.Errorf("%s at %s vs %s at %s", r1.Word, r1.Path, r2.Word, r2.Path)
		}
	}
}
