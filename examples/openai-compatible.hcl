# Nexus on a local OpenAI-compatible server: vLLM, Ollama and LM Studio here, OpenRouter as a
# hosted gateway. Start with:
#   OPENROUTER_API_KEY=sk-or-... nexus serve --config examples/openai-compatible.hcl
# (drop the openrouter blocks when you only run local servers; they need no key).

default_model = "vllm/qwen"
# The mock models (mock/scripted, mock/text-only) stay beside these, never as the default;
# in production leave them out:
# builtin_mock_models = false

# vLLM on this machine: `vllm serve Qwen/Qwen3-32B --enable-auto-tool-choice --tool-call-parser hermes`
model_provider "vllm" {
  type         = "openai"
  base_url     = "http://127.0.0.1:8000/v1"
  idle_timeout = "0s" # long silent reasoning phases before the first token
}

model "vllm/qwen" {
  id           = "Qwen/Qwen3-32B" # a provider id may hold characters a ref may not
  display_name = "Qwen3 32B (vLLM)"
  capabilities {
    tools             = true
    context_window    = 32768
    max_output_tokens = 4096
  }
  extra_body = { chat_template_kwargs = { enable_thinking = false } }
}

# Ollama knows only the older max_tokens field.
model_provider "ollama" {
  type             = "openai"
  base_url         = "http://127.0.0.1:11434/v1"
  max_tokens_field = "max_tokens"
}

model "ollama/llama" {
  id           = "llama3.1:8b"
  display_name = "Llama 3.1 8B (Ollama)"
  capabilities {
    tools             = true
    context_window    = 131072
    max_output_tokens = 4096
  }
}

# LM Studio with a vision model that takes one image per request; its streamed tool calls are
# read without streaming.
model_provider "lmstudio" {
  type     = "openai"
  base_url = "http://127.0.0.1:1234/v1"
  stream   = false
}

model "lmstudio/gemma" {
  id           = "google/gemma-3-12b"
  display_name = "Gemma 3 12B (LM Studio)"
  capabilities {
    tools             = true
    vision            = true
    context_window    = 32768
    max_output_tokens = 4096
  }
  media {
    images_max = 1
  }
}

model_provider "openrouter" {
  type     = "openai"
  base_url = "https://openrouter.ai/api/v1"
  api_key  = env("OPENROUTER_API_KEY")
  headers  = { "X-Title" = "Nexus" }
}

model "openrouter/deepseek" {
  id           = "deepseek/deepseek-chat-v3.1"
  display_name = "DeepSeek V3.1 (OpenRouter)"
  capabilities {
    tools             = true
    context_window    = 163840
    max_output_tokens = 8192
  }
  pricing {
    input_per_mtok  = 0.20
    output_per_mtok = 0.80
    currency        = "USD"
  }
}
