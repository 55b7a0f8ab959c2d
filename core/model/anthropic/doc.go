// Package anthropic is the adapter of model_provider type "anthropic": Anthropic's Messages API.
// It maps a sealed request to its request body (request.go, with the cache breakpoints of
// cache.go and the replayed provider blocks of blocks.go), reads a non-streamed answer
// (response.go) or folds a streamed one (stream.go), maps error answers to task error keys
// (errors.go), sends attempts (provider.go) and reports the capabilities the engine seals and
// stores by (config.go: cache usage counted, and replayed calls that need definitions);
// docs/providers.md states the mapping, native deferral through the Anthropic tool search tool
// included.
//
// It imports core/model and core/model/wire only, never touches the store, and never logs a
// request body or a credential. Retries are the decorator's (model.WithRetry).
package anthropic
