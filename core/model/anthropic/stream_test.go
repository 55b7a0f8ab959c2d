package anthropic

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
		return (*answer)(nil), read, err
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
	modeltest.FuzzFold(f, "testdata/cases", []byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":3}\n\n"), foldBody,
		func(body []byte) { _, _ = decodeMessage(body, hclog.NewNullLogger()) })
}

// TestStreamDeltasSpellTheAnswer: for every fixture stream that folds to an answer, the pieces
// handed to the delta listener, in order, are its text blocks' text and its tool calls' names
// as each call began.
func TestStreamDeltasSpellTheAnswer(t *testing.T) {
	t.Parallel()
	seen := 0
	for i, body := range modeltest.FixtureStreams(t, "testdata/cases") {
		var text strings.Builder
		var names []string
		a, _, err := readStream(bytes.NewReader(body), hclog.NewNullLogger(), func(d model.Delta) {
			text.WriteString(d.Text)
			if d.ToolCall != "" {
				names = append(names, d.ToolCall)
			}
		})
		if err != nil {
			continue
		}
		seen++
		var want strings.Builder
		for _, p := range a.content {
			if p.Type == model.PartText {
				want.WriteString(p.Text)
			}
		}
		var calls []string
		for _, c := range a.calls {
			calls = append(calls, c.Name)
		}
		if text.String() != want.String() || !slices.Equal(names, calls) {
			t.Errorf("stream %d: deltas spell %q and calls %q; the answer is %q with calls %q", i, text.String(), names, want.String(), calls)
		}
	}
	if seen == 0 {
		t.Fatal("no fixture stream folded to an answer")
	}
}
