package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/plugin"
	"github.com/nexuskernel/nexus/sdk/toolprovider"
)

// Version is the plugin's own version, reported to the host at the handshake.
const Version = "0.1.0"

// DefaultMaxChars bounds the text one call counts unless the config says otherwise: a long book
// chapter, far below the 1 MiB a tool input may hold.
const DefaultMaxChars = 100_000

// callTimeout is the park budget the tool announces: counting is instant, so a call that takes
// longer than this is stuck.
const callTimeout = 10 * time.Second

// Config is the plugin block's config object, decoded strictly: an unknown key refuses the
// plugin (plugin_config_refused).
type Config struct {
	// MaxChars bounds the text of one call; 0 means DefaultMaxChars.
	MaxChars int `json:"max_chars,omitempty"`
}

// Configure builds the provider from the block's config.
func Configure(cfg plugin.Config) (toolprovider.Provider, error) {
	var c Config
	if err := cfg.Decode(&c); err != nil {
		return nil, err
	}
	if c.MaxChars < 0 {
		return nil, fmt.Errorf("%w: max_chars must not be negative", plugin.ErrConfigInvalid)
	}
	return New(c), nil
}

// New answers the provider: a Mux that announces word_count and routes its calls.
func New(c Config) *toolprovider.Mux {
	maxChars := c.MaxChars
	if maxChars == 0 {
		maxChars = DefaultMaxChars
	}
	m := toolprovider.NewMux()
	m.Handle(toolprovider.Tool{
		Name:        "word_count",
		Description: "Count the words, lines and characters of a text.",
		InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"text":{"type":"string","maxLength":%d}},"required":["text"],"additionalProperties":false}`, maxChars)),
		// Pure: the same input always gives the same result and changes nothing, so the host
		// replays a call whose answer a crash lost.
		Effect:  announce.EffectPure,
		Timeout: callTimeout,
	}, wordCount(maxChars))
	return m
}

// counts is word_count's structured content.
type counts struct {
	Words      int `json:"words"`
	Lines      int `json:"lines"`
	Characters int `json:"characters"`
}

func wordCount(maxChars int) toolprovider.Handler {
	return func(_ context.Context, call toolprovider.Call) (toolprovider.Result, error) {
		var in struct {
			Text *string `json:"text"`
		}
		// An input the schema refuses is an error the model reads and can correct (IsError),
		// not a failed call.
		if err := call.Decode(&in); err != nil || in.Text == nil {
			return toolprovider.Result{Text: `invalid input: want {"text": "..."}`, IsError: true}, nil
		}
		text := *in.Text
		n := utf8.RuneCountInString(text)
		if n > maxChars {
			return toolprovider.Result{Text: fmt.Sprintf("invalid input: text has %d characters, more than %d", n, maxChars), IsError: true}, nil
		}
		c := counts{Words: len(strings.Fields(text)), Characters: n}
		if text != "" {
			c.Lines = strings.Count(text, "\n") + 1
			if strings.HasSuffix(text, "\n") {
				c.Lines--
			}
		}
		structured, err := json.Marshal(c)
		if err != nil {
			return toolprovider.Result{}, err
		}
		return toolprovider.Result{
			Text:       plural(c.Words, "word") + ", " + plural(c.Lines, "line") + ", " + plural(c.Characters, "character"),
			Structured: structured,
			Title:      "word count",
		}, nil
	}
}

// plural answers "1 word", "2 words".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
