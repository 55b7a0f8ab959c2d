package openai

import (
	"io"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/model/modeltest"
)

func foldBody(body io.Reader) (any, int64, error) {
	a, read, err := readStream(body, hclog.NewNullLogger())
	if a == nil {
		return (*message)(nil), read, err
	}
	return a, read, err
}

// TestStreamFoldIgnoresChunking: a fixture stream read a byte at a time folds to what it folds
// to in one piece.
func TestStreamFoldIgnoresChunking(t *testing.T) {
	t.Parallel()
	modeltest.FoldIgnoresChunking(t, "testdata/cases", foldBody)
}

// FuzzStream: the stream fold never panics and never reads past the body bound.
func FuzzStream(f *testing.F) {
	modeltest.FuzzFold(f, "testdata/cases", []byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":[1]}}]}}]}\n\n"), foldBody,
		func(body []byte) { _, _ = decodeCompletion(body, hclog.NewNullLogger()) })
}
