package modeltest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// OpenAIDefinition is where OpenAI's published API definition lies, relative to the repository
// root: beside the repository, never committed into it.
const OpenAIDefinition = "../shared/conformance/openai/openapi-chat-responses.json"

// chatRequest is the schema a Chat Completions request body must satisfy.
const chatRequest = "#/components/schemas/CreateChatCompletionRequest"

// RepoRoot finds the repository root (the directory holding go.mod) from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// OpenAIValidator compiles CreateChatCompletionRequest, with every component it reaches, from
// OpenAI's published definition and returns a check of request bodies. It fails, saying so
// plainly, when the document is absent, and it proves the check can fail: a request whose tool
// has no name must be refused, or the validator compiled nothing.
func OpenAIValidator() (func(body []byte) error, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(root, OpenAIDefinition)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("OpenAI's published definition is absent (%s): the openai request bodies cannot be checked against it: %w", path, err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return nil, fmt.Errorf("OpenAI's definition at %s: %w", path, err)
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
