package model

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
)

// Paging of models_list and GET /agent_api/v1/models (docs/api.md#models).
const (
	// DefaultListLimit is the page size when none is asked for.
	DefaultListLimit = 20
	// MaxListLimit is the largest page; a catalog is small, and a page must fit a tool result.
	MaxListLimit = 100
)

// ListQuery selects a page of the catalog. Limit 0 means DefaultListLimit.
type ListQuery struct {
	Query  string // case-insensitive substring of ref, provider or display name; "" keeps all
	Limit  int
	Offset int
}

// ListPage is the value models_list answers and GET /agent_api/v1/models serves.
type ListPage struct {
	Models     []Model
	Total      int
	Offset     int
	NextOffset *int // nil on the last page
}

// List filters the catalog by the query, sorted by ref in byte order, and cuts the page.
func (c *Catalog) List(q ListQuery) ListPage {
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	offset := max(q.Offset, 0)
	needle := strings.ToLower(q.Query)
	var kept []Model
	for _, m := range c.models { // already in ref order
		if needle == "" || strings.Contains(strings.ToLower(m.Ref), needle) ||
			strings.Contains(strings.ToLower(m.Provider), needle) ||
			strings.Contains(strings.ToLower(m.DisplayName), needle) {
			kept = append(kept, m.clone())
		}
	}
	page := ListPage{Models: []Model{}, Total: len(kept), Offset: offset}
	if offset < len(kept) {
		end := len(kept)
		if limit < end-offset {
			end = offset + limit
		}
		page.Models = kept[offset:end]
		if end < len(kept) {
			page.NextOffset = &end
		}
	}
	return page
}

// The JSON shapes, keys in the order docs/api.md#models gives them.
type listWire struct {
	Models     []modelWire `json:"models"`
	Total      int         `json:"total"`
	Offset     int         `json:"offset"`
	NextOffset *int        `json:"next_offset"`
}

type modelWire struct {
	Ref          string           `json:"ref"`
	Provider     string           `json:"provider"`
	Model        string           `json:"model"`
	DisplayName  string           `json:"display_name"`
	Capabilities capabilitiesWire `json:"capabilities"`
	Pricing      *pricingWire     `json:"pricing"`
}

type capabilitiesWire struct {
	Tools           bool   `json:"tools"`
	Vision          bool   `json:"vision"`
	PDF             bool   `json:"pdf"`
	Reasoning       bool   `json:"reasoning"`
	ContextWindow   *int64 `json:"context_window"`
	MaxOutputTokens *int64 `json:"max_output_tokens"`
}

type pricingWire struct {
	InputPerMTok  json.Number `json:"input_per_mtok"`
	OutputPerMTok json.Number `json:"output_per_mtok"`
	Currency      string      `json:"currency"`
}

// MarshalJSON encodes the page as compact JSON with HTML escaping off and keys in the order
// given, no trailing line feed: the content and structured_content of models_list.
func (p ListPage) MarshalJSON() ([]byte, error) {
	w := listWire{Models: make([]modelWire, len(p.Models)), Total: p.Total, Offset: p.Offset, NextOffset: p.NextOffset}
	for i, m := range p.Models {
		mw := modelWire{Ref: m.Ref, Provider: m.Provider, Model: m.Name, DisplayName: m.DisplayName,
			Capabilities: capabilitiesWire{Tools: m.Tools, Vision: m.Vision, PDF: m.PDF, Reasoning: m.Reasoning,
				ContextWindow: m.ContextWindow, MaxOutputTokens: m.MaxOutputTokens}}
		if m.Pricing != nil {
			mw.Pricing = &pricingWire{InputPerMTok: json.Number(m.Pricing.InputPerMTok),
				OutputPerMTok: json.Number(m.Pricing.OutputPerMTok), Currency: m.Pricing.Currency}
		}
		w.Models[i] = mw
	}
	return encodeCompact(w)
}

// encodeCompact encodes v compactly without HTML escaping and without the encoder's trailing
// line feed.
func encodeCompact(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// clampInt converts a whole, non-negative float to an int, saturating where an offset that large
// can only mean "past the end".
func clampInt(f float64) int {
	if f >= math.MaxInt32 {
		return math.MaxInt32
	}
	return int(f)
}
