package runs

import (
	"bytes"
	"fmt"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/projection"
)

// target is the projection target of a model: its provider's native search variant.
func target(m model.Model) projection.Target {
	return projection.Target{NativeSearch: m.NativeSearch}
}

// optionsFor builds a round's request_options from what the set offers the model's provider and
// what the provider reports of its wire (docs/providers.md, what a provider receives).
func optionsFor(offer projection.Offer, entries []model.Entry, m model.Model, caps model.ProviderCapabilities) model.RequestOptions {
	return model.RequestOptionsFor(offer.Tools, offer.ToolSearch, entries, m, caps)
}

// optionsPrefix is the sealed request's bytes between its entries and request_options.
const optionsPrefix = `],"request_options":`

// optionsSuffix is the sealed request's bytes after its entries: request_options, closing the
// request and the envelope.
func optionsSuffix(o model.RequestOptions) ([]byte, error) {
	enc, err := o.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return append(append([]byte(optionsPrefix), enc...), "}}"...), nil
}

// parseOptions reads request_options back from a stored seal's suffix.
func parseOptions(suffix []byte) (model.RequestOptions, error) {
	body, ok := bytes.CutPrefix(suffix, []byte(optionsPrefix))
	if !ok || !bytes.HasSuffix(body, []byte("}}")) {
		return model.RequestOptions{}, fmt.Errorf("runs: a sealed request's suffix is not request_options")
	}
	var o model.RequestOptions
	err := o.UnmarshalJSON(body[:len(body)-2])
	return o, err
}
