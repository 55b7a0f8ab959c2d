package modeltest

import (
	"bytes"
	"context"
	"flag"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2/hclparse"
	"golang.org/x/tools/txtar"

	"github.com/nexuskernel/nexus/core/model"
)

var update = flag.Bool("update", false, "rewrite the want/ sections of the adapter case files")

// AdapterFor builds the adapter of a provider type with the kit's logger.
type AdapterFor func(log hclog.Logger) model.Adapter

// CaseOptions adjust RunCases.
type CaseOptions struct {
	// Type is the provider type the adapter serves.
	Type string
	// Validate checks a request body against a published definition; nil checks nothing.
	Validate func(body []byte) error
}

// Encoder is an adapter that can build a request body without sending it (determinism checks).
type Encoder interface {
	Body(ctx context.Context, req *model.Request) ([]byte, error)
}

// RunCases runs every testdata/cases/*.txtar of dir as a subtest.
func RunCases(t *testing.T, dir string, adapter AdapterFor, opts CaseOptions) {
	files, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no case files in %s: %v", dir, err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runCase(t, file, adapter, opts)
		})
	}
}

// logBuffer captures every log line of a case.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *logBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

func section(a *txtar.Archive, name string) ([]byte, bool) {
	for _, f := range a.Files {
		if f.Name == name {
			return f.Data, true
		}
	}
	return nil, false
}

func runCase(t *testing.T, file string, adapter AdapterFor, opts CaseOptions) {
	a, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	other := NewFake(t)
	var replies []Reply
	for n := 1; ; n++ {
		data, sse := section(a, "reply/"+strconv.Itoa(n)+".sse")
		if !sse {
			var ok bool
			if data, ok = section(a, "reply/"+strconv.Itoa(n)+".http"); !ok {
				break
			}
		}
		r, err := ParseReply(strings.ReplaceAll(string(data), "{{other}}", other.URL), sse)
		if err != nil {
			t.Fatal(err)
		}
		replies = append(replies, r)
	}
	fake := NewFake(t, replies...)
	hcl, ok := section(a, "model.hcl")
	if !ok {
		t.Fatal("no model.hcl")
	}
	src := strings.ReplaceAll(string(hcl), "{{server}}", fake.URL)
	f, diags := hclparse.NewParser().ParseHCL([]byte(src), "model.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	cfg, _, diags := model.DecodeConfig(f.Body, func(n string) string {
		if n == "NEXUS_TEST_KEY" {
			return TestKey
		}
		return ""
	})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	for i := range cfg.Providers {
		if cfg.Providers[i].BaseURL == "" {
			cfg.Providers[i].BaseURL = fake.URL
		}
	}
	logs := &logBuffer{}
	log := hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Trace})
	cat, err := model.NewCatalogWith(cfg, map[string]model.Adapter{opts.Type: adapter(log)})
	if err != nil {
		t.Fatal(err)
	}
	sealedRaw, ok := section(a, "sealed.json")
	if !ok {
		t.Fatal("no sealed.json")
	}
	req, err := ParseSealed(sealedRaw)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := cat.Lookup(req.Ref)
	if !ok {
		t.Fatalf("sealed model %s is not in model.hcl", req.Ref)
	}
	req.Model = m.WireID()
	media := Media{}
	for _, sf := range a.Files {
		if id, ok := strings.CutPrefix(sf.Name, "uploads/"); ok {
			if media[id], err = DecodeUploads(string(sf.Data)); err != nil {
				t.Fatalf("%s: %v", sf.Name, err)
			}
		}
	}
	req.Media = media
	provider, _ := cat.Provider(m.Provider)
	clock := NewClock(time.Date(2025, 3, 1, 9, 30, 0, 0, time.UTC))
	retrying := model.WithRetry(provider, clock, rand.New(rand.NewPCG(1, 1)), model.RetryLog(log))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() {
		select {
		case <-fake.HangStarted:
			cancel()
		case <-ctx.Done():
		}
	}()
	resp, callErr := retrying.Complete(ctx, req)
	if bytes.Contains(a.Comment, []byte("!hang")) || anyHang(replies) {
		select {
		case <-fake.HangClosed:
		case <-time.After(5 * time.Second):
			t.Error("the fake never saw the hanging connection close")
		}
	}
	reqs := fake.Requests()
	if p := fake.Pending(); p != 0 {
		t.Errorf("%d replies were never asked for", p)
	}
	if len(other.Requests()) != 0 {
		t.Errorf("the other origin received %d requests", len(other.Requests()))
	}
	outcome, err := OutcomeOf(resp, callErr, len(reqs), clock.WaitsMS())
	if err != nil {
		t.Fatal(err)
	}
	result, err := jsonIndent(outcome)
	if err != nil {
		t.Fatal(err)
	}
	result = strings.NewReplacer(other.URL, "{{other}}", fake.URL, "{{server}}").Replace(result)
	got := map[string]string{"want/result.json": result}
	if len(reqs) > 0 {
		body, err := Indent(reqs[0].Body)
		if err != nil {
			t.Fatalf("request body is not JSON: %v\n%s", err, reqs[0].Body)
		}
		got["want/request.json"] = body
		got["want/headers.txt"] = headerText(reqs[0].Header)
		for i, r := range reqs[1:] {
			if !bytes.Equal(r.Body, reqs[0].Body) {
				t.Errorf("attempt %d sent another body than the first", i+2)
			}
		}
		if opts.Validate != nil {
			if err := opts.Validate(reqs[0].Body); err != nil {
				t.Errorf("the request body breaks the published definition: %v", err)
			}
		}
		if enc, ok := provider.(Encoder); ok {
			b1, err1 := enc.Body(context.Background(), req)
			b2, err2 := enc.Body(context.Background(), req)
			if err1 != nil || err2 != nil || !bytes.Equal(b1, b2) || !bytes.Equal(b1, reqs[0].Body) {
				t.Errorf("the body is not deterministic (%v %v)", err1, err2)
			}
		}
	}
	// Providers echo a key's head and tail ("nexus-te…7b1e0c"): neither may reach a log line or
	// a result, any more than the whole key.
	for _, secret := range []string{TestKey, TestKey[:8], TestKey[len(TestKey)-6:]} {
		for what, text := range map[string]string{"a log line": logs.String(), "the result": result} {
			if strings.Contains(text, secret) {
				t.Errorf("the key appears in %s:\n%s", what, text)
			}
		}
	}
	if *update {
		rewrite(t, file, a, got)
		return
	}
	for name, text := range got {
		want, ok := section(a, name)
		if !ok {
			if name == "want/result.json" {
				t.Errorf("no %s; got\n%s", name, text)
			}
			continue
		}
		w := string(want)
		if strings.HasSuffix(name, ".json") {
			if w, err = Indent(want); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		if strings.TrimSpace(w) != strings.TrimSpace(text) {
			t.Errorf("%s differs\n--- want\n%s\n--- got\n%s", name, w, text)
		}
	}
}

func anyHang(replies []Reply) bool {
	for _, r := range replies {
		if strings.Contains(r.Body, "\n!hang") || strings.HasPrefix(r.Body, "!hang") {
			return true
		}
	}
	return false
}

// headerText lists request headers, names lower-cased and sorted, without those the Go
// transport adds.
func headerText(h map[string][]string) string {
	var lines []string
	for k, vs := range h {
		n := strings.ToLower(k)
		if n == "content-length" || n == "accept-encoding" {
			continue
		}
		for _, v := range vs {
			lines = append(lines, n+": "+v)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n"
}

func jsonIndent(v any) (string, error) {
	var b bytes.Buffer
	enc := jsonEncoder(&b)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return Indent(b.Bytes())
}

func rewrite(t *testing.T, file string, a *txtar.Archive, got map[string]string) {
	names := []string{"want/request.json", "want/headers.txt", "want/result.json"}
	var kept []txtar.File
	for _, f := range a.Files {
		if !strings.HasPrefix(f.Name, "want/") {
			kept = append(kept, f)
		}
	}
	for _, n := range names {
		if text, ok := got[n]; ok {
			kept = append(kept, txtar.File{Name: n, Data: []byte(strings.TrimSpace(text) + "\n")})
		}
	}
	a.Files = kept
	if err := os.WriteFile(file, txtar.Format(a), 0o644); err != nil {
		t.Fatal(err)
	}
}

// FixtureStreams are the SSE bodies of a directory's case files, directives removed: seeds for
// the stream fuzzers and inputs of the chunking tests.
func FixtureStreams(t testing.TB, dir string) [][]byte {
	files, _ := filepath.Glob(filepath.Join(dir, "*.txtar"))
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

// Fold reads a streamed body into an answer, as an adapter's stream reader does.
type Fold func(body io.Reader) (answer any, read int64, err error)

// FoldIgnoresChunking checks that every fixture stream of dir, read a byte at a time, folds to
// what it folds to in one piece.
func FoldIgnoresChunking(t *testing.T, dir string, fold Fold) {
	for i, body := range FixtureStreams(t, dir) {
		whole, _, err1 := fold(bytes.NewReader(body))
		bytewise, _, err2 := fold(iotest.OneByteReader(bytes.NewReader(body)))
		if (err1 == nil) != (err2 == nil) || !reflect.DeepEqual(whole, bytewise) {
			t.Errorf("stream %d folds differently byte by byte: %v %v", i, err1, err2)
		}
	}
}

// FuzzFold fuzzes a stream fold seeded with dir's fixture streams and extra: it never panics,
// never reads past the body bound, and answers or fails; decode, the adapter's non-streamed
// reader, gets the same bytes.
func FuzzFold(f *testing.F, dir string, extra []byte, fold Fold, decode func([]byte)) {
	for _, b := range FixtureStreams(f, dir) {
		f.Add(b)
	}
	f.Add(extra)
	f.Fuzz(func(t *testing.T, body []byte) {
		a, read, err := fold(bytes.NewReader(body))
		if read > maxBody {
			t.Fatalf("read %d bytes", read)
		}
		if err == nil && reflect.ValueOf(a).IsNil() {
			t.Fatal("no answer and no error")
		}
		decode(body)
	})
}

// maxBody is the adapters' response bound (wire.MaxBodyBytes), which the kit may not import.
const maxBody = 16 << 20
