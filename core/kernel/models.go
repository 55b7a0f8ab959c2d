package kernel

import (
	"context"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/runs"
)

// CanonicalModelsList is models_list's canonical name.
const CanonicalModelsList = "nexus.models.list"

// Models runs models_list over the live catalog (docs/api.md#models).
type Models struct {
	Catalog *model.Catalog
}

// Run answers the page, or the invalid_arguments error result.
func (m *Models) Run(ctx context.Context, call *runs.KernelCall) (*runs.KernelOutcome, error) {
	r, err := m.Catalog.ModelsList(call.Input)
	if err != nil {
		return nil, err
	}
	return &runs.KernelOutcome{Result: &runs.KernelResult{Content: r.Content, StructuredContent: r.StructuredContent,
		IsError: r.IsError, Title: r.Title}}, nil
}
