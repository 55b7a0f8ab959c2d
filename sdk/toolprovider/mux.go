package toolprovider

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/nexuskernel/nexus/sdk/announce"
)

// Tool is one tool a Mux serves, as it is announced.
type Tool struct {
	Name string
	// Description is model-facing; "" announces none.
	Description string
	// InputSchema is a JSON Schema object with "type": "object"; nil announces none.
	InputSchema json.RawMessage
	Effect      announce.EffectProfile
	// Timeout is the tool's park budget; zero announces none (the kernel's default applies).
	Timeout time.Duration
}

// Handler runs one call of a tool.
type Handler func(ctx context.Context, call Call) (Result, error)

// Mux is a Provider built from typed handlers: it announces its tools in registration order,
// with its documents and environment, and routes each call to its tool's handler.
type Mux struct {
	mu       sync.RWMutex
	tools    []Tool
	handlers map[string]Handler
	docs     []announce.Document
	env      json.RawMessage
	envErr   error
}

var _ Provider = (*Mux)(nil)

// NewMux returns an empty Mux.
func NewMux() *Mux { return &Mux{handlers: map[string]Handler{}} }

// Handle registers a tool and its handler. Registering a name twice replaces the handler and
// keeps the first position.
func (m *Mux) Handle(tool Tool, h Handler) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.handlers[tool.Name]; !dup {
		m.tools = append(m.tools, tool)
	} else {
		for i := range m.tools {
			if m.tools[i].Name == tool.Name {
				m.tools[i] = tool
			}
		}
	}
	m.handlers[tool.Name] = h
}

// Documents sets the documents the provider announces (stored and shown on executor reads).
func (m *Mux) Documents(docs ...announce.Document) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.docs = append([]announce.Document(nil), docs...)
}

// Environment sets the environment facts, any value that encodes as a JSON object.
func (m *Mux) Environment(env any) {
	raw, err := json.Marshal(env)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.env, m.envErr = raw, err
}

// Announce implements Provider.
func (m *Mux) Announce(context.Context) (announce.Announcement, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.envErr != nil {
		return announce.Announcement{}, fmt.Errorf("toolprovider: environment: %w", m.envErr)
	}
	a := announce.Announcement{Environment: m.env, Documents: append([]announce.Document(nil), m.docs...)}
	for _, t := range m.tools {
		entry := announce.Tool{Name: t.Name, EffectProfile: announce.Announced(t.Effect)}
		if t.Description != "" {
			d := t.Description
			entry.Description = &d
		}
		if len(t.InputSchema) > 0 {
			entry.InputSchema = append(json.RawMessage(nil), t.InputSchema...)
		}
		if t.Timeout > 0 {
			ms := t.Timeout.Milliseconds()
			entry.TimeoutMS = &ms
		}
		a.Tools = append(a.Tools, entry)
	}
	return a, nil
}

// Call implements Provider: a tool without a handler is ErrUnknownTool.
func (m *Mux) Call(ctx context.Context, call Call) (Result, error) {
	m.mu.RLock()
	h, ok := m.handlers[call.Tool]
	m.mu.RUnlock()
	if !ok {
		return Result{}, fmt.Errorf("%w: %s", ErrUnknownTool, call.Tool)
	}
	return h(ctx, call)
}
