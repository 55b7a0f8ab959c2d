package toolsexample

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/plugin"
	"github.com/nexuskernel/nexus/sdk/toolprovider"
)

// Version is the semantic version of this provider.
const Version = "1.0.0"

// Limits of the tools (docs/plugins.md).
const (
	// MaxEchoChars bounds example_echo's text: enough for any demonstration, small enough that
	// five repeats stay a short result.
	MaxEchoChars = 4096
	// MaxRepeat bounds example_echo's repeat.
	MaxRepeat = 5
	// MaxNumbers bounds example_stats' input list.
	MaxNumbers = 1000
	// MaxTitleChars bounds example_report's title, a one-line caption.
	MaxTitleChars = 200
	// DefaultMaxRows bounds example_report's rows unless the config says otherwise: a thousand
	// rows is a capture of tens of kilobytes, well inside the host's capture bound.
	DefaultMaxRows = 1000
	// MaxSleep bounds example_control's sleep at ten minutes, under its own timeout.
	MaxSleep = 600_000 * time.Millisecond
	// shortTimeout and controlTimeout are the announced park budgets.
	shortTimeout   = 10 * time.Second
	controlTimeout = 60 * time.Second
)

// Config is the provider's config block.
type Config struct {
	// MaxRows bounds example_report's rows; 0 means DefaultMaxRows.
	MaxRows int `json:"max_rows,omitempty"`
}

// FailureText is what example_control answers in modes error and failed.
const FailureText = "example failure requested"

// New returns the provider: a Mux with the four tools, the guide document and the environment.
func New(cfg Config) *toolprovider.Mux {
	maxRows := cfg.MaxRows
	if maxRows <= 0 {
		maxRows = DefaultMaxRows
	}
	m := toolprovider.NewMux()
	m.Handle(toolprovider.Tool{
		Name: "example_echo", Description: "Echo text back, optionally repeated or upper-cased.",
		InputSchema: echoSchema, Effect: announce.EffectPure, Timeout: shortTimeout,
	}, echo)
	m.Handle(toolprovider.Tool{
		Name: "example_stats", Description: "Count, sum, minimum, maximum and mean of a list of numbers.",
		InputSchema: statsSchema, Effect: announce.EffectPure, Timeout: shortTimeout,
	}, stats)
	m.Handle(toolprovider.Tool{
		Name: "example_report", Description: "Render named values as a CSV report attached to the result.",
		InputSchema: reportSchema(maxRows), Effect: announce.EffectReadOnly, Timeout: shortTimeout,
	}, report(maxRows))
	m.Handle(toolprovider.Tool{
		Name: "example_control", Description: "Fail, report an error or sleep on request, for testing hosts.",
		InputSchema: controlSchema, Effect: announce.EffectWrite, Timeout: controlTimeout,
	}, control)
	m.Documents(announce.Document{Name: "example-guide", Description: "How to use the example tools."})
	m.Environment(map[string]any{"provider": "tools-example", "deterministic": true})
	return m
}

// Configure builds the provider from the plugin's config block.
func Configure(cfg plugin.Config) (toolprovider.Provider, error) {
	var c Config
	if err := cfg.Decode(&c); err != nil {
		return nil, err
	}
	if c.MaxRows < 0 {
		return nil, fmt.Errorf("%w: max_rows must not be negative", plugin.ErrConfigInvalid)
	}
	return New(c), nil
}

// invalid answers input that fails the schema.
func invalid(format string, args ...any) (toolprovider.Result, error) {
	return toolprovider.Result{Text: "invalid input: " + fmt.Sprintf(format, args...), IsError: true}, nil
}

// decodeReason says why strict decoding refused the input, in the schema's words rather than
// Go's.
func decodeReason(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return fmt.Sprintf("%s must be %s", typeErr.Field, jsonType(typeErr.Type.Kind()))
	case errors.As(err, &typeErr):
		return "the input must be a JSON object"
	case errors.As(err, &syntaxErr), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the input is not valid JSON"
	}
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return "unknown property " + field
	}
	return err.Error()
}

func jsonType(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "an array"
	}
	return "an object"
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only structs of numbers and strings are marshalled here
	}
	return b
}
