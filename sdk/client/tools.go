package client

import (
	"context"
	"encoding/json"
	"net/http"
)

// EffectProfile is a tool's trusted effect metadata.
type EffectProfile struct {
	Kind           string `json:"kind"`
	Destructive    bool   `json:"destructive"`
	EffectScope    string `json:"effect_scope"`
	Idempotency    string `json:"idempotency"`
	Reconciliation string `json:"reconciliation"`
}

// CatalogEntry is one kernel tool of GET /agent_api/v1/tools.
type CatalogEntry struct {
	CanonicalName string        `json:"canonical_name"`
	Name          string        `json:"name"`
	EffectProfile EffectProfile `json:"effect_profile"`
	// Definition is kept as the server's bytes: a profile declares it byte for byte.
	Definition json.RawMessage `json:"definition"`
	Template   string          `json:"template"`
}

// Catalog is the kernel tool catalog: the entries and the exact bytes the server sent.
type Catalog struct {
	Tools []CatalogEntry
	// Raw is the response body as served.
	Raw []byte
	// ETag is the body's strong validator.
	ETag string
}

// Tools fetches the kernel tool catalog.
func (c *Client) Tools(ctx context.Context) (*Catalog, error) {
	resp, raw, err := c.do(ctx, http.MethodGet, "/agent_api/v1/tools", nil, nil)
	if err != nil {
		return nil, err
	}
	var body struct {
		Tools []CatalogEntry `json:"tools"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, err
	}
	return &Catalog{Tools: body.Tools, Raw: raw, ETag: resp.Header.Get("ETag")}, nil
}
