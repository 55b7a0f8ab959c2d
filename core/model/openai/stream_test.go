package openai

import (
	"bytes"

	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/tools/txtar"

	"github.com/nexuskernel/nexus/core/model/wire"
)

// fixtureStreams are the SSE bodies of the case files.
func fixtureStreams(t testing.TB) [][]byte {
	files, _ := filepath.Glob("testdata/cases/*.txtar")
	var out [][]byte
	for _, f := range files {
		a, err := txtar.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range a.Files {
			if strings.HasSuffix(s.Name, ".sse") {
				_, body, _ := strings.Cut(string(s.Data), "\n\n")
				var kept []string
				for _, l := range strings.Split(body, "\n") {
					if !strings.HasPrefix(l, "!") {
						kept = append(kept, l)
					}
				}
				out = append(out, []byte(strings.Join(kept, "\n")))
			}
		}
	}
	return out
}

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
