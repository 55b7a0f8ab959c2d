package anthropic_test

import (
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/model/anthropic"
	"github.com/nexuskernel/nexus/core/model/modeltest"
)

func adapter(log hclog.Logger) model.Adapter {
	return anthropic.Adapter(anthropic.Options{Log: log, Version: "test"})
}

func TestCases(t *testing.T) {
	modeltest.RunCases(t, "testdata/cases", adapter, modeltest.CaseOptions{Type: model.ProviderTypeAnthropic})
}
