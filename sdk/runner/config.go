package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/client"
)

// Config is a runner's file: the tools it announces, each with the command that serves it, and the
// environment facts it announces. Tool entries are announcement entries
// (docs/api.md#the-executor-plane) plus command, dir and env, which stay on the runner's machine.
//
//	{"environment": {"os": "linux"},
//	 "concurrency": 4,
//	 "tools": [{"name": "uptime", "description": "How long the machine has been up.",
//	            "input_schema": {"type": "object"},
//	            "effect_profile": {"kind": "read_only", "destructive": false, "effect_scope": "closed",
//	                               "idempotency": "intrinsic", "reconciliation": "none"},
//	            "timeout_ms": 10000,
//	            "command": ["uptime"]}]}
type Config struct {
	Environment json.RawMessage     `json:"environment,omitempty"`
	Documents   []announce.Document `json:"documents,omitempty"`
	Concurrency int                 `json:"concurrency,omitempty"`
	Tools       []ConfigTool        `json:"tools"`
}

// ConfigTool is one served tool of the file.
type ConfigTool struct {
	announce.Tool
	Command []string          `json:"command"`
	Dir     string            `json:"dir,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

// LoadConfig reads and checks a runner file: every tool needs a command, and the announcement
// must pass the same validation the server runs, so that a bad file fails before it connects.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseConfig(b)
}

// ParseConfig is LoadConfig over bytes.
func ParseConfig(b []byte) (*Config, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("runner config: %w", err)
	}
	a := announce.Announcement{Environment: c.Environment, Documents: c.Documents}
	for i, t := range c.Tools {
		if len(t.Command) == 0 {
			return nil, fmt.Errorf("runner config: tools[%d] (%s) has no command", i, t.Name)
		}
		a.Tools = append(a.Tools, t.Tool)
	}
	if r := announce.Validate(a); r != nil {
		return nil, fmt.Errorf("runner config: %s: %s", r.Code, r.Message)
	}
	return &c, nil
}

// Runner builds the runner the file describes over an executor client.
func (c *Config) Runner(cl *client.Client) *Runner {
	r := &Runner{Client: cl, Environment: c.Environment, Documents: c.Documents, Concurrency: c.Concurrency}
	for _, t := range c.Tools {
		r.Tools = append(r.Tools, Tool{Announce: t.Tool, Handle: Command{Argv: t.Command, Dir: t.Dir, Env: t.Env}.Handler()})
	}
	return r
}
