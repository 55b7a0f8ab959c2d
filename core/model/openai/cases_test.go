package openai_test

import (
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/model/modeltest"
	"github.com/nexuskernel/nexus/core/model/openai"
)

func adapter(log hclog.Logger) model.Adapter {
	return openai.Adapter(openai.Options{Log: log, Version: "test"})
}

// TestCases runs testdata/cases: every request body they pin is checked against OpenAI's own
// published definition.
func TestCases(t *testing.T) {
	validate, err := modeltest.OpenAIValidator()
	if err != nil {
		t.Fatal(err)
	}
	modeltest.RunCases(t, "testdata/cases", adapter, modeltest.CaseOptions{Type: model.ProviderTypeOpenAI, Validate: validate})
}
