package openai

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/model/modeltest"
)

func foldBody(body io.Reader) (any, int64, error) {
	a, read, err := readStream(body, hclog.NewNullLogger(), nil)
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

// TestStreamDeltasSpellTheAnswer: for every fixture stream that folds to an answer, the pieces
// handed to the delta listener, in order, are the answer's text and then its calls' names as
// each call began.
func TestStreamDeltasSpellTheAnswer(t *testing.T) {
	t.Parallel()
	seen := 0
	for i, body := range modeltest.FixtureStreams(t, "testdata/cases") {
		var text strings.Builder
		var names []string
		m, _, err := readStream(bytes.NewReader(body), hclog.NewNullLogger(), func(d model.Delta) {
			text.WriteString(d.Text)
			if d.ToolCall != "" {
				names = append(names, d.ToolCall)
			}
		})
		if err != nil {
			continue
		}
		seen++
		var calls []string
		for _, c := range m.calls {
			calls = append(calls, c.Name)
		}
		if text.String() != m.text || !slices.Equal(names, calls) {
			t.Errorf("stream %d: deltas spell %q and calls %q; the answer is %q with calls %q", i, text.String(), names, m.text, calls)
		}
	}
	if seen == 0 {
		t.Fatal("no fixture stream folded to an answer")
	}
}
