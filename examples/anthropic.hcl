# Nexus on Anthropic. Start with:
#   ANTHROPIC_API_KEY=sk-ant-... nexus serve --config examples/anthropic.hcl

default_model = "anthropic/sonnet"
# The mock models (mock/scripted, mock/text-only) stay beside these, never as the default;
# in production leave them out:
# builtin_mock_models = false

model_provider "anthropic" {
  type    = "anthropic"
  api_key = env("ANTHROPIC_API_KEY")
  # base_url defaults to https://api.anthropic.com; anthropic_version to 2023-06-01.
  # prompt_cache = true (the default) places the cache breakpoints.
}

# A second block on the same account that lets Anthropic hold deferred tools back itself, for
# agents that mark tools deferred without declaring tool_search and tool_call.
model_provider "anthropic-native" {
  type          = "anthropic"
  api_key       = env("ANTHROPIC_API_KEY")
  tool_deferral = "native"
  tool_search   = "bm25"
}

model "anthropic/sonnet" {
  id           = "claude-sonnet-4-5"
  display_name = "Claude Sonnet"
  capabilities {
    tools             = true
    vision            = true
    pdf               = true
    reasoning         = true
    strict_tools      = true
    context_window    = 200000
    max_output_tokens = 16000
  }
  pricing {
    input_per_mtok        = 3
    output_per_mtok       = 15
    cached_input_per_mtok = 0.30
    cache_write_per_mtok  = 3.75
    currency              = "USD"
  }
  reasoning {
    thinking      = "enabled"
    budget_tokens = 4096
  }
}

model "anthropic-native/sonnet" {
  id           = "claude-sonnet-4-5"
  display_name = "Claude Sonnet (native tool search)"
  capabilities {
    tools             = true
    vision            = true
    pdf               = true
    context_window    = 200000
    max_output_tokens = 16000
  }
  pricing {
    input_per_mtok  = 3
    output_per_mtok = 15
    currency        = "USD"
  }
}
