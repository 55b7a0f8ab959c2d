// Package openai is the adapter of model_provider type "openai": OpenAI's Chat Completions, the
// wire OpenAI and most compatible servers (vLLM, Ollama, LM Studio, OpenRouter, gateways) speak.
// It maps a sealed request to its request body (request.go), reads a non-streamed answer
// (response.go) or folds a streamed one (stream.go), maps error answers to task error keys
// (errors.go), sends attempts (provider.go) and reports the capabilities the engine seals and
// stores by (config.go: cache usage counted); docs/providers.md states the mapping.
//
// It imports core/model and core/model/wire only, never touches the store, and never logs a
// request body or a credential. Retries are the decorator's (model.WithRetry).
package openai
