package mcpbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuskernel/nexus/sdk/announce/jsonwire"
	"github.com/nexuskernel/nexus/sdk/toolprovider"
)

func testMapping() mapping {
	return mapping{
		server:          &ServerConfig{Name: "every", MaxTextBytes: DefaultMaxTextBytes, MaxStructuredBytes: DefaultMaxStructuredBytes},
		tool:            &mcp.Tool{Name: "get-tiny-image", Title: "Get Tiny Image Tool"},
		protocolVersion: "2025-11-25",
	}
}

func TestResultExample(t *testing.T) {
	png := []byte("\x89PNG fake")
	r := mapResult(context.Background(), testMapping(), &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "Here's the image you requested:"},
		&mcp.ImageContent{Data: png, MIMEType: "image/png"},
		&mcp.TextContent{Text: "The image above is the MCP logo."},
	}})
	if r.Title != "every: Get Tiny Image Tool" {
		t.Errorf("title %q", r.Title)
	}
	if string(r.Metadata) != `{"mcp":{"protocol_version":"2025-11-25","server":"every","tool":"get-tiny-image"}}` {
		t.Errorf("metadata %s", r.Metadata)
	}
	l := r.Blocks[1].Link
	if len(r.Blocks) != 3 || l == nil || *l != (toolprovider.ResourceLink{URI: "capture:c1", Name: "image-1.png", MimeType: "image/png", Size: int64(len(png))}) {
		t.Errorf("blocks %+v", r.Blocks)
	}
	if len(r.Captures) != 1 || r.Captures[0].Ref != "c1" || string(r.Captures[0].Data) != string(png) {
		t.Errorf("captures %+v", r.Captures)
	}
}

func TestResultCaptureBounds(t *testing.T) {
	var c []mcp.Content
	for i := 0; i < 17; i++ {
		c = append(c, &mcp.ImageContent{Data: []byte("img"), MIMEType: "image/x-odd"})
	}
	r := mapResult(context.Background(), testMapping(), &mcp.CallToolResult{Content: c})
	if len(r.Captures) != 16 || r.Captures[15].Filename != "image-16.bin" {
		t.Fatalf("%d captures", len(r.Captures))
	}
	if got := *r.Blocks[16].Text; got != "[image image/x-odd of 3 bytes not attached: a result carries at most 16 files and 8 MiB]" {
		t.Errorf("placeholder %q", got)
	}
	big := make([]byte, 5<<20)
	r = mapResult(context.Background(), testMapping(), &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.AudioContent{Data: big, MIMEType: "audio/mpeg"},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "x://a/b", MIMEType: "application/zip", Blob: big}},
	}})
	if len(r.Captures) != 1 || r.Captures[0].Filename != "audio-1.mp3" || *r.Blocks[1].Text != fmt.Sprintf("[resource application/zip of %d bytes not attached: a result carries at most 16 files and 8 MiB]", len(big)) {
		t.Errorf("byte bound: %+v", r.Blocks)
	}
}

func TestResultTextBudget(t *testing.T) {
	m := testMapping()
	m.server.MaxTextBytes = 4096
	r := mapResult(context.Background(), m, &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: strings.Repeat("a", 3000)},
		&mcp.ImageContent{Data: []byte("i"), MIMEType: "image/png"},
		&mcp.TextContent{Text: strings.Repeat("é", 1000)},
		&mcp.TextContent{Text: "dropped"},
	}})
	ts := texts(r)
	if len(ts) != 3 || len(ts[0]) != 3000 || len(ts[1]) != 1096 || r.Blocks[1].Link == nil {
		t.Fatalf("kept %d blocks: %v", len(ts), len(ts[1]))
	}
	total := 3000 + 2000 + len("dropped")
	if ts[2] != fmt.Sprintf("[output truncated: 4096 of %d bytes shown; the full text is attached as output.txt]", total) {
		t.Errorf("marker %q", ts[2])
	}
	last := r.Captures[len(r.Captures)-1]
	if last.Filename != "output.txt" || len(last.Data) != total+2 {
		t.Errorf("output.txt %s %d", last.Filename, len(last.Data))
	}
	if !strings.Contains(string(r.Metadata), fmt.Sprintf(`"text_truncated":{"kept":4096,"total":%d}`, total)) {
		t.Errorf("metadata %s", r.Metadata)
	}
	// When output.txt does not fit, the marker ends "bytes shown]".
	var c []mcp.Content
	for i := 0; i < 16; i++ {
		c = append(c, &mcp.ImageContent{Data: []byte("i"), MIMEType: "image/png"})
	}
	c = append(c, &mcp.TextContent{Text: strings.Repeat("b", 5000)})
	r = mapResult(context.Background(), m, &mcp.CallToolResult{Content: c})
	if ts := texts(r); ts[len(ts)-1] != "[output truncated: 4096 of 5000 bytes shown]" || len(r.Captures) != 16 {
		t.Errorf("marker without attachment %q", ts[len(ts)-1])
	}
}

func TestResultStructuredContent(t *testing.T) {
	m := testMapping()
	r := mapResult(context.Background(), m, &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: `{"b":1,"a":2}`}},
		StructuredContent: map[string]any{"b": 1, "a": 2},
	})
	if string(r.Structured) != `{"a":2,"b":1}` || strings.Join(texts(r), "") != `{"b":1,"a":2}` {
		t.Errorf("structured %s text %v", r.Structured, texts(r))
	}
	m.server.MaxStructuredBytes = 10
	r = mapResult(context.Background(), m, &mcp.CallToolResult{StructuredContent: map[string]any{"long": "0123456789"}})
	if r.Structured != nil || !strings.Contains(string(r.Metadata), `"structured_content_omitted_bytes":21`) || len(r.Blocks) != 0 {
		t.Errorf("omitted: %s %s", r.Structured, r.Metadata)
	}
	r = mapResult(context.Background(), m, &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "bad"}}, Meta: mcp.Meta{"k": "v"}})
	if !r.IsError || !strings.Contains(string(r.Metadata), `"result_meta":{"k":"v"}`) {
		t.Errorf("is_error %v meta %s", r.IsError, r.Metadata)
	}
}

func TestResourceFilenames(t *testing.T) {
	for _, c := range []struct {
		uri, link, mime string
		k, idx          int
		want            string
	}{
		{"demo://resource/dynamic/blob/2", "", "text/plain", 1, 0, "resource-1.txt"},
		{"demo://resource/dynamic/blob/1", "Blob Resource 1", "text/plain", 1, 0, "Blob Resource 1.txt"},
		{"file:///srv/a/notes.txt", "x", "text/plain", 1, 0, "notes.txt"},
		{"file:///srv/a/pic.png", "", "image/png", 1, 2, "pic-2.png"},
		{"x://h/a", "we/ird:name", "application/x-unknown", 3, 0, "we_ird_name"},
		{"x://h/a", " . ", "", 4, 0, "resource-4"},
		{"x://h/a", strings.Repeat("n", 150), "text/csv", 1, 0, strings.Repeat("n", 100) + ".csv"},
	} {
		if got := resourceFilename(c.uri, c.link, c.k, c.mime, c.idx); got != c.want {
			t.Errorf("resourceFilename(%q, %q) = %q, want %q", c.uri, c.link, got, c.want)
		}
	}
}

// TestResultWorstCase fills every budget at once: the committed content and structured content
// stay under the 1 MiB commit bound.
func TestResultWorstCase(t *testing.T) {
	m := testMapping()
	m.server.MaxTextBytes, m.server.MaxStructuredBytes = MaxTextBytesLimit, MaxTextBytesLimit
	var c []mcp.Content
	for i := 0; i < 40; i++ {
		c = append(c, &mcp.TextContent{Text: strings.Repeat("\"\\", 20000)})
		c = append(c, &mcp.ImageContent{Data: []byte("i"), MIMEType: "image/png"})
		c = append(c, &mcp.ResourceLink{URI: "x://" + strings.Repeat("u", 2000), Name: strings.Repeat("n", 2000)})
	}
	r := mapResult(context.Background(), m, &mcp.CallToolResult{Content: c, StructuredContent: map[string]any{"s": strings.Repeat("x", MaxTextBytesLimit-10)}})
	if size := commitSize(t, r); size > 1<<20 {
		t.Errorf("worst case commits %d bytes", size)
	}
}

// commitSize measures content plus structured_content as canonical JSON, as the host does.
func commitSize(t testing.TB, r toolprovider.Result) int {
	var blocks []any
	for _, b := range r.Blocks {
		if b.Text != nil {
			blocks = append(blocks, map[string]any{"type": "text", "text": *b.Text})
		} else {
			blocks = append(blocks, map[string]any{"type": "resource_link", "uri": "nexus://uploads/upl_0123456789abcdef0123456789", "name": b.Link.Name, "mimeType": b.Link.MimeType, "size": b.Link.Size})
		}
	}
	raw, _ := json.Marshal(blocks)
	canon, _, err := jsonwire.Canonical(raw)
	if err != nil {
		t.Fatal(err)
	}
	return len(canon) + len(r.Structured)
}

func FuzzResultMapping(f *testing.F) {
	f.Add([]byte(`{"content":[{"type":"text","text":"hi"},{"type":"image","data":"aGk=","mimeType":"image/png"}],"structuredContent":{"a":1}}`))
	f.Add([]byte(`{"content":[{"type":"resource","resource":{"uri":"x://a/b.txt","blob":"aGk="}},{"type":"resource_link","uri":"x://y","name":"n","size":3}],"isError":true}`))
	f.Add([]byte(`{"content":[{"type":"audio","data":"","mimeType":""},{"type":"resource","resource":{"uri":"","text":""}}],"_meta":{"k":[1]}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var res mcp.CallToolResult
		if json.Unmarshal(body, &res) != nil {
			return
		}
		m := testMapping()
		m.server.MaxTextBytes = minMaxTextBytes
		r := mapResult(context.Background(), m, &res)
		refs := map[string]bool{}
		total := 0
		for _, c := range r.Captures {
			refs[c.Ref] = true
			total += len(c.Data)
		}
		if len(r.Captures) > maxCaptures || total > maxCaptureBytes {
			t.Fatalf("%d captures of %d bytes", len(r.Captures), total)
		}
		for _, b := range r.Blocks {
			if (b.Text == nil) == (b.Link == nil) {
				t.Fatal("a block is neither or both")
			}
			if b.Link != nil && (!refs[strings.TrimPrefix(b.Link.URI, "capture:")] || b.Link.Name == "") {
				t.Fatalf("link %+v names no capture", b.Link)
			}
		}
		if !json.Valid(r.Metadata) || (r.Structured != nil && !json.Valid(r.Structured)) {
			t.Fatal("invalid JSON in metadata or structured content")
		}
		if commitSize(t, r) > 1<<20 {
			t.Fatal("over the commit bound")
		}
	})
}
