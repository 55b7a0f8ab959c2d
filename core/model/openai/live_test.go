package openai_test

import (
	"testing"

	"github.com/nexuskernel/nexus/core/model/modeltest"
)

// TestLive runs against a real OpenAI-compatible server when NEXUS_TEST_OPENAI_BASE_URL is set.
func TestLive(t *testing.T) {
	modeltest.Live(t, modeltest.LiveConfig{Type: "openai", BaseURL: "NEXUS_TEST_OPENAI_BASE_URL", Key: "NEXUS_TEST_OPENAI_API_KEY",
		Model: "NEXUS_TEST_OPENAI_MODEL", MaxTokensField: "NEXUS_TEST_OPENAI_MAX_TOKENS_FIELD"}, adapter)
}
