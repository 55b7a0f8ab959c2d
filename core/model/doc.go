// Package model owns what the kernel knows about model providers: the Provider interface, the
// capabilities a provider reports of its wire (ProviderCapabilities: what the engine reads instead
// of a provider's type) and the provider-neutral request and response types a sealed request is
// handed over in, with their stored encodings (the entry grammar and request_options, placeholders
// included), the models catalog read from configuration (providers, models, capabilities,
// pricing) with its lookups, cost computation and the value models_list and GET
// /agent_api/v1/models serve, and the deterministic, offline mock provider driven by a script
// embedded in the prompt.
//
// It is a leaf that runs, kernel and httpapi all use: it imports core/refusal, sdk/jsonwire and
// the standard library (plus HCL for the configuration blocks), never another core package. It
// never touches the store, never assembles a request (the round driver seals one and hands it
// here) and never decides what a failed call does to a run.
package model
