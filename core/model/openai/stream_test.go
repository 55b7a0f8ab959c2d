package openai

import (
	"bytes"

	"reflect"
	"testing"
	"testing/iotest"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/model/modeltest"
	"github.com/nexuskernel/nexus/core/model/wire"
)

func fixtureStreams(t testing.TB) [][]byte { return modeltest.FixtureStreams(t, "testdata/cases") }

// TestStreamFoldIgnoresChunking: a fixture stream read a byte at a time folds to what it folds
// to in one piece.
func TestStreamFoldIgnoresChunking(t *testing.T) {
	t.Parallel()
	log := hclog.NewNullLogger()
	for i, body := range fixtureStreams(t) {
		whole, _, err1 := readStream(bytes.NewReader(body), log)
		bytewise, _, err2 := readStream(iotest.OneByteReader(bytes.NewReader(body)), log)
		if (err1 == nil) != (err2 == nil) || !reflect.DeepEqual(whole, bytewise) {
			t.Errorf("stream %d folds differently byte by byte: %v %v", i, err1, err2)
		}
	}
}

// FuzzStream: the stream fold never panics and never reads past the body bound.
func FuzzStream(f *testing.F) {
	for _, b := range fixtureStreams(f) {
		f.Add(b)
	}
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":[1]}}]}}]}\n\n"))
	log := hclog.NewNullLogger()
	f.Fuzz(func(t *testing.T, body []byte) {
		m, read, err := readStream(bytes.NewReader(body), log)
		if read > wire.MaxBodyBytes {
			t.Fatalf("read %d bytes", read)
		}
		if err == nil && m == nil {
			t.Fatal("no answer and no error")
		}
		_, _ = decodeCompletion(body, log)
	})
}
