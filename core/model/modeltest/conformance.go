package modeltest

import (
	"bytes"
	_ "embed"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// openAIDefinition is OpenAI's published API definition, cut to the chat and responses
// operations, as testdata/openai/README.md describes (MIT licence, testdata/openai/LICENSE).
//
//go:embed testdata/openai/openapi-chat-responses.json
var openAIDefinition []byte

// chatRequest is the schema a Chat Completions request body must satisfy.
const chatRequest = "#/components/schemas/CreateChatCompletionRequest"

// OpenAIValidator compiles CreateChatCompletionRequest, with every component it reaches, from
// OpenAI's published definition and returns a check of request bodies. It proves the check can
// fail: a request whose tool has no name must be refused, or the validator compiled nothing.
func OpenAIValidator() (func(body []byte) error, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(openAIDefinition))
	if err != nil {
		return nil, fmt.Errorf("OpenAI's definition (testdata/openai): %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	const url = "https://openai.example/openapi.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	sch, err := c.Compile(url + chatRequest)
	if err != nil {
		return nil, fmt.Errorf("compiling %s: %w", chatRequest, err)
	}
	validate := func(body []byte) error {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
		if err != nil {
			return err
		}
		return sch.Validate(v)
	}
	nameless := []byte(`{"model":"gpt-5.1","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"description":"no name"}}]}`)
	if validate(nameless) == nil {
		return nil, fmt.Errorf("the validator accepts a tool without a name: it checks nothing")
	}
	named := []byte(`{"model":"gpt-5.1","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"read_file"}}]}`)
	if err := validate(named); err != nil {
		return nil, fmt.Errorf("the validator refuses a plain request: %w", err)
	}
	return validate, nil
}
