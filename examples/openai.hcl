# Nexus on OpenAI. Start with:
#   OPENAI_API_KEY=sk-... nexus serve --config examples/openai.hcl
# The key is read from the environment when the server starts; it is never written here.

default_model = "openai/gpt"
# The mock models (mock/scripted, mock/text-only) stay beside these, never as the default;
# in production leave them out:
# builtin_mock_models = false

model_provider "openai" {
  type    = "openai"
  api_key = env("OPENAI_API_KEY")
  # base_url defaults to https://api.openai.com/v1.
  # organization = "org-..."    # sent as OpenAI-Organization
  # project      = "proj_..."   # sent as OpenAI-Project
}

model "openai/gpt" {
  id           = "gpt-5.1"
  display_name = "GPT-5.1"
  capabilities {
    tools             = true
    vision            = true
    pdf               = true
    reasoning         = true
    strict_tools      = true
    context_window    = 400000
    max_output_tokens = 16000
  }
  pricing {
    input_per_mtok        = 1.25
    output_per_mtok       = 10
    cached_input_per_mtok = 0.125
    currency              = "USD"
  }
  reasoning {
    effort = "medium"
  }
}

model "openai/mini" {
  id           = "gpt-5-mini"
  display_name = "GPT-5 mini"
  capabilities {
    tools             = true
    vision            = true
    context_window    = 400000
    max_output_tokens = 16000
  }
  pricing {
    input_per_mtok  = 0.25
    output_per_mtok = 2
    currency        = "USD"
  }
}
