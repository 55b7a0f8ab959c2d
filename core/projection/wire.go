package projection

import (
	"github.com/nexuskernel/nexus/core/declare/jsonv"
	"github.com/nexuskernel/nexus/core/refusal"
)

// CodeModelCapabilityUnavailable is the word a round fails with when its request needs a
// capability the model lacks (docs/api.md#runs), here strict tool use on an Anthropic-style model.
const CodeModelCapabilityUnavailable = "model_capability_unavailable"

// functionParts reads name, description, parameters and strict from a projected entry,
// nested or flat. A top-level strict on a nested entry counts when function has none.
func functionParts(p jsonv.Value) (fn jsonv.Value, strict jsonv.Value, hasStrict bool) {
	fn, nested := p.Get("function")
	if !nested {
		fn = p
	}
	strict, hasStrict = fn.Get("strict")
	if !hasStrict && nested {
		strict, hasStrict = p.Get("strict")
	}
	return fn, strict, hasStrict
}

// OpenAITools is the Chat Completions wire shape of offered tools: always nested,
// {"type":"function","function":{"name","description","parameters","strict"}}, description and
// parameters only when the entry has them. Names, texts and schemas are not changed.
func OpenAITools(tools []jsonv.Value) jsonv.Value {
	out := make([]jsonv.Value, len(tools))
	for i, p := range tools {
		out[i] = jsonv.Object(jsonv.M("type", jsonv.String("function")), jsonv.M("function", flatFunction(p)))
	}
	return jsonv.Array(out...)
}

// ResponsesTools is the Responses-style wire shape: flat
// {"type":"function","name","description","parameters","strict"}.
func ResponsesTools(tools []jsonv.Value) jsonv.Value {
	out := make([]jsonv.Value, len(tools))
	for i, p := range tools {
		ms := []jsonv.Member{jsonv.M("type", jsonv.String("function"))}
		out[i] = jsonv.Object(append(ms, flatFunction(p).Members()...)...)
	}
	return jsonv.Array(out...)
}

func flatFunction(p jsonv.Value) jsonv.Value {
	fn, strict, hasStrict := functionParts(p)
	var ms []jsonv.Member
	for _, k := range []string{"name", "description", "parameters"} {
		if v, ok := fn.Get(k); ok {
			ms = append(ms, jsonv.M(k, v))
		}
	}
	if hasStrict {
		ms = append(ms, jsonv.M("strict", strict))
	}
	return jsonv.Object(ms...)
}

// AnthropicTools is the Anthropic Messages wire shape: {"name","description","input_schema"},
// input_schema being the entry's parameters or an empty object schema. strict: false is not
// sent; strict: true is sent only when the model supports strict tool use, and otherwise the
// request is refused model_capability_unavailable rather than silently loosened.
func AnthropicTools(tools []jsonv.Value, strictSupported bool) (jsonv.Value, error) {
	out := make([]jsonv.Value, len(tools))
	for i, p := range tools {
		fn, strict, _ := functionParts(p)
		name, _ := fn.Get("name")
		ms := []jsonv.Member{jsonv.M("name", name)}
		if d, ok := fn.Get("description"); ok {
			ms = append(ms, jsonv.M("description", d))
		}
		schema, ok := fn.Get("parameters")
		if !ok {
			schema = jsonv.Object(jsonv.M("type", jsonv.String("object")), jsonv.M("properties", jsonv.Object()))
		}
		ms = append(ms, jsonv.M("input_schema", schema))
		if b, _ := strict.AsBool(); b {
			if !strictSupported {
				n, _ := name.AsString()
				return jsonv.Value{}, refusal.Newf(refusal.Unprocessable, CodeModelCapabilityUnavailable,
					"The tool %q asks for strict tool use, which this model does not support.", n)
			}
			ms = append(ms, jsonv.M("strict", jsonv.Bool(true)))
		}
		out[i] = jsonv.Object(ms...)
	}
	return jsonv.Array(out...), nil
}
