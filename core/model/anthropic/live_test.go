package anthropic_test

import (
	"testing"

	"github.com/nexuskernel/nexus/core/model/modeltest"
)

// TestLive runs against Anthropic when NEXUS_TEST_ANTHROPIC_BASE_URL is set.
func TestLive(t *testing.T) {
	modeltest.Live(t, modeltest.LiveConfig{Type: "anthropic", BaseURL: "NEXUS_TEST_ANTHROPIC_BASE_URL", Key: "NEXUS_TEST_ANTHROPIC_API_KEY",
		Model: "NEXUS_TEST_ANTHROPIC_MODEL"}, adapter)
}
