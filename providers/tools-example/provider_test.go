package toolsexample_test

import (
	"testing"

	toolsexample "github.com/nexuskernel/nexus/providers/tools-example"
	"github.com/nexuskernel/nexus/sdk/toolprovider/toolprovidertest"
)

func TestToolsExample(t *testing.T) {
	t.Parallel()
	p := toolsexample.New(toolsexample.Config{})
	toolprovidertest.CheckAnnouncement(t, p)
	t.Run("in_process", func(t *testing.T) { toolprovidertest.RunGolden(t, p, "testdata/golden") })
	t.Run("over_grpc", func(t *testing.T) {
		toolprovidertest.RunGolden(t, toolprovidertest.OverGRPC(t, p), "testdata/golden")
	})
}
