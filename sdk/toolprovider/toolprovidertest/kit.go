package toolprovidertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/plugin"
	"github.com/nexuskernel/nexus/sdk/toolprovider"
)

// update rewrites golden files from the results a provider gives instead of comparing them.
var update = flag.Bool("toolprovidertest.update", false, "rewrite golden files from the provider's results")

// CheckAnnouncement fails t unless p's announcement passes announce.ValidatePlugin for the
// tool_provider kind, exactly as the host checks it at load.
func CheckAnnouncement(t testing.TB, p toolprovider.Provider) {
	t.Helper()
	a, err := p.Announce(context.Background())
	if err != nil {
		t.Fatalf("announce: %v", err)
	}
	if r := announce.ValidatePlugin(announce.PluginKindToolProvider, a); r != nil {
		for _, e := range r.Errors {
			t.Errorf("announcement refused: %s at %s (name %q): %s", e.Code, e.Path, e.Name, e.Message)
		}
	}
}

// Golden is one golden file: a call and the result it must give. Exactly one of Result and
// Error is set.
type Golden struct {
	Tool  string          `json:"tool"`
	Input json.RawMessage `json:"input"`
	// Result is the expected result.
	Result *GoldenResult `json:"result,omitempty"`
	// Error is the expected error: "failed: <detail>" for a Result with Failed (or the error
	// toolprovider.Failed), or the error kind word ("unknown_tool", …) for any other.
	Error string `json:"error,omitempty"`
}

// GoldenResult is toolprovider.Result in a readable, comparable form. Raw JSON fields are
// compared compacted; capture data is text.
type GoldenResult struct {
	Text       string          `json:"text,omitempty"`
	Blocks     []GoldenBlock   `json:"blocks,omitempty"`
	Structured json.RawMessage `json:"structured,omitempty"`
	IsError    bool            `json:"is_error,omitempty"`
	Title      string          `json:"title,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	Captures   []GoldenCapture `json:"captures,omitempty"`
}

// GoldenBlock is a content block: a text or a resource_link.
type GoldenBlock struct {
	Type        string `json:"type"`
	Text        string `json:"text,omitempty"`
	URI         string `json:"uri,omitempty"`
	Name        string `json:"name,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
	Size        int64  `json:"size,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
}

// GoldenCapture is a capture with its bytes as text.
type GoldenCapture struct {
	Ref      string `json:"ref"`
	Filename string `json:"filename"`
	Data     string `json:"data"`
}

// RunGolden runs one subtest per *.json file in dir: the file's call against p, its result
// compared with the file's. With -toolprovidertest.update the files are rewritten instead.
func RunGolden(t *testing.T, p toolprovider.Provider, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no golden files in %s", dir)
	}
	sort.Strings(files)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".json"), func(t *testing.T) {
			runGolden(t, p, file)
		})
	}
}

func runGolden(t *testing.T, p toolprovider.Provider, file string) {
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var g Golden
	if err := json.Unmarshal(src, &g); err != nil {
		t.Fatalf("golden file: %v", err)
	}
	res, callErr := p.Call(t.Context(), toolprovider.Call{Tool: g.Tool, Input: g.Input, Claim: toolprovider.ClaimInfo{Attempt: 1}})
	got := Golden{Tool: g.Tool, Input: g.Input}
	switch {
	case callErr != nil:
		got.Error = errorWord(callErr)
	case res.Failed:
		got.Error = "failed: " + res.FailureDetail // what the host reads over gRPC
	default:
		gr, err := goldenOf(res)
		if err != nil {
			t.Fatal(err)
		}
		got.Result = gr
	}
	if *update {
		out, err := json.MarshalIndent(got, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	compact(g.Result)
	compact(got.Result)
	if diff := cmp.Diff(g, got); diff != "" {
		t.Errorf("%s (-golden +got):\n%s", filepath.Base(file), diff)
	}
}

func errorWord(err error) string {
	var failed *toolprovider.FailedError
	if errors.As(err, &failed) {
		return "failed: " + failed.Detail
	}
	var ce *toolprovider.CallError
	if errors.As(err, &ce) {
		return ce.Kind
	}
	if errors.Is(err, toolprovider.ErrUnknownTool) {
		return "unknown_tool"
	}
	return "internal"
}

func goldenOf(r toolprovider.Result) (*GoldenResult, error) {
	g := &GoldenResult{Text: r.Text, Structured: r.Structured, IsError: r.IsError, Title: r.Title, Metadata: r.Metadata}
	for _, b := range r.Blocks {
		switch {
		case b.Text != nil:
			g.Blocks = append(g.Blocks, GoldenBlock{Type: "text", Text: *b.Text})
		case b.Link != nil:
			l := b.Link
			g.Blocks = append(g.Blocks, GoldenBlock{Type: "resource_link", URI: l.URI, Name: l.Name, MimeType: l.MimeType, Size: l.Size, Title: l.Title, Description: l.Description})
		default:
			g.Blocks = append(g.Blocks, GoldenBlock{Type: "empty"})
		}
	}
	for _, c := range r.Captures {
		if !utf8.Valid(c.Data) {
			return nil, fmt.Errorf("capture %q is not text; golden files hold text captures only", c.Ref)
		}
		g.Captures = append(g.Captures, GoldenCapture{Ref: c.Ref, Filename: c.Filename, Data: string(c.Data)})
	}
	return g, nil
}

// compact rewrites raw JSON fields compacted, so a golden file may be indented.
func compact(g *GoldenResult) {
	if g == nil {
		return
	}
	for _, raw := range []*json.RawMessage{&g.Structured, &g.Metadata} {
		if len(*raw) == 0 {
			continue
		}
		var b bytes.Buffer
		if json.Compact(&b, *raw) == nil {
			*raw = b.Bytes()
		}
	}
}

// OverGRPC serves p through the real gRPC shims over an in-process go-plugin pair (no
// subprocess) and answers the host's client, configured with an empty config block. The pair
// is closed when t ends.
func OverGRPC(t testing.TB, p toolprovider.Provider) toolprovider.Client {
	t.Helper()
	key := plugin.KindToolProvider.PluginSetKey()
	client, _ := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{key: toolprovider.ServerPlugin(toolprovider.ServeConfig{
		Info: plugin.Info{Name: "toolprovidertest", Version: "0.0.0"},
		Configure: func(context.Context, plugin.Config) (toolprovider.Provider, error) {
			return p, nil
		},
	})})
	t.Cleanup(func() {
		// Close shuts the server down through go-plugin's controller; stopping it again races.
		_ = client.Close()
	})
	raw, err := client.Dispense(key)
	if err != nil {
		t.Fatalf("dispense tool_provider: %v", err)
	}
	c, ok := raw.(toolprovider.Client)
	if !ok {
		t.Fatalf("dispensed %T, not a toolprovider.Client", raw)
	}
	if err := c.Configure(context.Background(), plugin.Config{PluginName: "toolprovidertest"}); err != nil {
		t.Fatalf("configure: %v", err)
	}
	return c
}
