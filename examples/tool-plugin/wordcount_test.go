package main

import (
	"testing"

	"github.com/nexuskernel/nexus/sdk/toolprovider/toolprovidertest"
)

// TestWordCount runs the SDK's conformance kit: the announcement passes the host's own check,
// and every call in testdata/golden gives its result byte for byte, in process and over the real
// gRPC shims. `go test ./... -toolprovidertest.update` rewrites the golden files.
func TestWordCount(t *testing.T) {
	t.Parallel()
	p := New(Config{})
	toolprovidertest.CheckAnnouncement(t, p)
	t.Run("in_process", func(t *testing.T) { toolprovidertest.RunGolden(t, p, "testdata/golden") })
	t.Run("over_grpc", func(t *testing.T) {
		toolprovidertest.RunGolden(t, toolprovidertest.OverGRPC(t, p), "testdata/golden")
	})
}
