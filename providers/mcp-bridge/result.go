package mcpbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuskernel/nexus/sdk/announce/jsonwire"
	"github.com/nexuskernel/nexus/sdk/toolprovider"
)

// Result bounds (docs/plugins.md#what-a-model-sees).
const (
	// maxCaptures and maxCaptureBytes are the host's bounds on one result's files.
	maxCaptures     = 16
	maxCaptureBytes = 8 << 20
	// maxTitleBytes bounds a result's one-line title.
	maxTitleBytes = 512
	// maxResultMetaBytes bounds the result _meta kept in metadata, which is bounded at 64 KiB.
	maxResultMetaBytes = 16 << 10
	// maxCommitBytes is the commit bound on content plus structured_content (canonical JSON).
	maxCommitBytes = 1 << 20
	// linkURIBytes is room for the host's rewritten link URI (nexus://uploads/<public id>).
	linkURIBytes = 96
	// maxFilenameBytes bounds a capture's filename before its extension.
	maxFilenameBytes = 100
)

// extensions is the fixed MIME type → extension table; the system's MIME database is never
// consulted, so a capture's name does not depend on the machine.
var extensions = map[string]string{
	"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp",
	"image/svg+xml": ".svg", "image/bmp": ".bmp", "audio/mpeg": ".mp3", "audio/wav": ".wav",
	"audio/x-wav": ".wav", "audio/ogg": ".ogg", "audio/flac": ".flac", "application/pdf": ".pdf",
	"application/json": ".json", "text/plain": ".txt", "text/markdown": ".md", "text/csv": ".csv",
	"text/html": ".html", "application/gzip": ".gz", "application/zip": ".zip",
}

var (
	hasExtRE       = regexp.MustCompile(`\.[A-Za-z0-9]{1,8}$`)
	unsafeFileChar = regexp.MustCompile(`[^A-Za-z0-9._ -]`)
)

// mapping is what result translation needs to know about the call.
type mapping struct {
	server          *ServerConfig
	tool            *mcp.Tool
	protocolVersion string
	// read resolves a resource_link; nil keeps every link as text.
	read func(ctx context.Context, uri string) (*mcp.ReadResourceResult, error)
}

// block is a content block under construction.
type block struct {
	text   *string
	link   *toolprovider.ResourceLink
	source string // the MCP resource URI it came from, for metadata
}

type resultBuilder struct {
	m        mapping
	blocks   []block
	captures []toolprovider.Capture
	bytes    int
	images   int
	audios   int
	res      int
}

func (rb *resultBuilder) addText(s, source string) {
	rb.blocks = append(rb.blocks, block{text: &s, source: source})
}

// fits reports whether one more capture of n bytes stays within the result's file bounds.
func (rb *resultBuilder) fits(n int) bool {
	return len(rb.captures) < maxCaptures && rb.bytes+n <= maxCaptureBytes
}

// attach stages data as the next capture and adds a link to it.
func (rb *resultBuilder) attach(data []byte, link toolprovider.ResourceLink, source string) {
	ref := fmt.Sprintf("c%d", len(rb.captures)+1)
	rb.captures = append(rb.captures, toolprovider.Capture{Ref: ref, Filename: link.Name, Data: data})
	rb.bytes += len(data)
	link.URI = toolprovider.CaptureURI(ref)
	link.Size = int64(len(data))
	rb.blocks = append(rb.blocks, block{link: &link, source: source})
}

func notAttached(kind, mime string, n int) string {
	return fmt.Sprintf("[%s %s of %d bytes not attached: a result carries at most 16 files and 8 MiB]", kind, mime, n)
}

// mapResult translates a CallToolResult into the result envelope (docs/plugins.md#what-a-model-sees):
// text as text, images, audio and blobs as captures with links, embedded text inline,
// resource links read into captures or kept as their JSON, structuredContent copied (never
// into the text), within the result's budgets.
func mapResult(ctx context.Context, m mapping, res *mcp.CallToolResult) toolprovider.Result {
	rb := &resultBuilder{m: m}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			rb.addText(c.Text, "")
		case *mcp.ImageContent:
			rb.media("image", c.Data, c.MIMEType)
		case *mcp.AudioContent:
			rb.media("audio", c.Data, c.MIMEType)
		case *mcp.EmbeddedResource:
			rb.embedded(c.Resource)
		case *mcp.ResourceLink:
			rb.resourceLink(ctx, c)
		default:
			// Content types that belong to sampling only; a tool result has none.
			rb.addText(fmt.Sprintf("[%T content not shown]", c), "")
		}
	}
	out := toolprovider.Result{IsError: res.IsError, Title: title(m)}
	meta := map[string]any{
		"server":           m.server.Name,
		"tool":             m.tool.Name,
		"protocol_version": m.protocolVersion,
	}
	if res.StructuredContent != nil {
		raw, err := json.Marshal(res.StructuredContent)
		if err == nil {
			canon, _, cerr := jsonwire.Canonical(raw)
			switch {
			case cerr != nil:
			case len(canon) > m.server.MaxStructuredBytes:
				meta["structured_content_omitted_bytes"] = len(canon)
			case string(canon) != "null":
				out.Structured = canon
			}
		}
	}
	// The budgets count text bytes; escapes can make the committed JSON larger. When the
	// result would pass the commit bound anyway, structured content goes first, then text.
	blocks, captures, nbytes := rb.blocks, rb.captures, rb.bytes
	for limit := m.server.MaxTextBytes; ; {
		rb.blocks, rb.captures, rb.bytes = append([]block(nil), blocks...), append([]toolprovider.Capture(nil), captures...), nbytes
		rb.budgetText(meta, limit)
		over := contentSize(rb.blocks) + len(out.Structured) - maxCommitBytes
		if over <= 0 || limit == 0 {
			break
		}
		if out.Structured != nil {
			meta["structured_content_omitted_bytes"] = len(out.Structured)
			out.Structured = nil
			continue
		}
		limit = max(0, limit-over)
	}
	if len(res.Meta) > 0 {
		if raw, err := json.Marshal(res.Meta); err == nil && len(raw) <= maxResultMetaBytes {
			meta["result_meta"] = json.RawMessage(raw)
		}
	}
	var sources []map[string]any
	out.Blocks = make([]toolprovider.Block, 0, len(rb.blocks))
	for i, b := range rb.blocks {
		if b.source != "" {
			sources = append(sources, map[string]any{"block": i, "uri": b.source})
		}
		out.Blocks = append(out.Blocks, toolprovider.Block{Text: b.text, Link: b.link})
	}
	if sources != nil {
		meta["sources"] = sources
	}
	md, _ := json.Marshal(map[string]any{"mcp": meta})
	out.Metadata, _, _ = jsonwire.Canonical(md)
	out.Captures = rb.captures
	return out
}

func (rb *resultBuilder) media(kind string, data []byte, mime string) {
	k := 0
	if kind == "image" {
		rb.images++
		k = rb.images
	} else {
		rb.audios++
		k = rb.audios
	}
	if !rb.fits(len(data)) {
		rb.addText(notAttached(kind, mime, len(data)), "")
		return
	}
	ext := extensions[mime]
	if ext == "" {
		ext = ".bin"
	}
	name := fmt.Sprintf("%s-%d%s", kind, k, ext)
	rb.attach(data, toolprovider.ResourceLink{Name: name, MimeType: mime}, "")
}

func (rb *resultBuilder) embedded(r *mcp.ResourceContents) {
	if r == nil {
		rb.addText("", "")
		return
	}
	if r.Blob == nil {
		rb.addText(r.Text, r.URI)
		return
	}
	rb.res++
	if !rb.fits(len(r.Blob)) {
		rb.addText(notAttached("resource", r.MIMEType, len(r.Blob)), r.URI)
		return
	}
	name := resourceFilename(r.URI, "", rb.res, r.MIMEType, 0)
	rb.attach(r.Blob, toolprovider.ResourceLink{Name: name, MimeType: r.MIMEType}, r.URI)
}

func (rb *resultBuilder) resourceLink(ctx context.Context, l *mcp.ResourceLink) {
	if rb.m.read != nil && rb.readLink(ctx, l) {
		return
	}
	rb.addText(linkJSON(l), "")
}

// readLink reads a link's resource into captures; false (and nothing added) when the read
// fails, times out or would pass the capture bounds.
func (rb *resultBuilder) readLink(ctx context.Context, l *mcp.ResourceLink) bool {
	rctx, cancel := context.WithTimeout(ctx, resourceReadTimeout)
	defer cancel()
	rr, err := rb.m.read(rctx, l.URI)
	if err != nil || rr == nil || len(rr.Contents) == 0 {
		return false
	}
	total := 0
	for _, c := range rr.Contents {
		if c == nil {
			return false
		}
		total += len(contentsBytes(c))
	}
	if len(rb.captures)+len(rr.Contents) > maxCaptures || rb.bytes+total > maxCaptureBytes {
		return false
	}
	for i, c := range rr.Contents {
		rb.res++
		idx := 0
		if len(rr.Contents) > 1 {
			idx = i + 1
		}
		mime := c.MIMEType
		if mime == "" {
			mime = l.MIMEType
		}
		uri := c.URI
		if uri == "" {
			uri = l.URI
		}
		name := resourceFilename(uri, l.Name, rb.res, mime, idx)
		rb.attach(contentsBytes(c), toolprovider.ResourceLink{Name: name, MimeType: mime, Title: l.Title, Description: l.Description}, uri)
	}
	return true
}

func contentsBytes(c *mcp.ResourceContents) []byte {
	if c.Blob != nil {
		return c.Blob
	}
	return []byte(c.Text)
}

// linkJSON is the canonical JSON of an MCP link's own fields, the shape the kernel shows a
// model for a link it cannot attach.
func linkJSON(l *mcp.ResourceLink) string {
	m := map[string]any{"type": "resource_link", "uri": l.URI}
	if l.Name != "" {
		m["name"] = l.Name
	}
	if l.Title != "" {
		m["title"] = l.Title
	}
	if l.Description != "" {
		m["description"] = l.Description
	}
	if l.MIMEType != "" {
		m["mimeType"] = l.MIMEType
	}
	if l.Size != nil {
		m["size"] = *l.Size
	}
	raw, _ := json.Marshal(m)
	canon, _, err := jsonwire.Canonical(raw)
	if err != nil {
		return string(raw)
	}
	return string(canon)
}

// resourceFilename names a resource capture: the URI's last path segment when it has a dot,
// else the link's name, else resource-<k>; made safe, cut, then given the type's extension.
// idx > 0 puts "-<idx>" before the extension (several contents from one read).
func resourceFilename(uri, linkName string, k int, mime string, idx int) string {
	name := ""
	if seg := path.Base(uriPath(uri)); strings.Contains(seg, ".") && seg != "." && seg != ".." {
		name = seg
	} else if linkName != "" {
		name = linkName
	}
	name = unsafeFileChar.ReplaceAllString(name, "_")
	name = strings.Trim(name, " .")
	name = cutUTF8(name, maxFilenameBytes)
	name = strings.Trim(name, " .")
	if name == "" {
		name = fmt.Sprintf("resource-%d", k)
	}
	ext := ""
	if !hasExtRE.MatchString(name) {
		ext = extensions[mime]
	} else if idx > 0 {
		if dot := strings.LastIndexByte(name, '.'); dot > 0 {
			name, ext = name[:dot], name[dot:]
		}
	}
	if idx > 0 {
		name = fmt.Sprintf("%s-%d", name, idx)
	}
	return name + ext
}

// uriPath is the path part of a URI, without query or fragment.
func uriPath(uri string) string {
	if i := strings.IndexAny(uri, "?#"); i >= 0 {
		uri = uri[:i]
	}
	if i := strings.Index(uri, "://"); i >= 0 {
		uri = uri[i+3:]
		if j := strings.IndexByte(uri, '/'); j >= 0 {
			return uri[j:]
		}
		return ""
	}
	return uri
}

// budgetText keeps the text blocks within max_text_bytes: in order, cutting the crossing block
// and dropping the text blocks after it, then a marker and the full text as output.txt when it
// fits the capture bounds.
func (rb *resultBuilder) budgetText(meta map[string]any, limit int) {
	total := 0
	var all []string
	for _, b := range rb.blocks {
		if b.text != nil {
			total += len(*b.text)
			all = append(all, *b.text)
		}
	}
	if total <= limit {
		return
	}
	kept := 0
	out := rb.blocks[:0:0]
	for _, b := range rb.blocks {
		if b.text == nil {
			out = append(out, b)
			continue
		}
		if kept >= limit {
			continue
		}
		t := *b.text
		if kept+len(t) > limit {
			t = cutUTF8(t, limit-kept)
		}
		kept += len(t)
		out = append(out, block{text: &t, source: b.source})
	}
	rb.blocks = out
	meta["text_truncated"] = map[string]int{"kept": kept, "total": total}
	full := []byte(strings.Join(all, "\n"))
	if rb.fits(len(full)) {
		rb.addText(fmt.Sprintf("[output truncated: %d of %d bytes shown; the full text is attached as output.txt]", kept, total), "")
		rb.attach(full, toolprovider.ResourceLink{Name: "output.txt", MimeType: "text/plain"}, "")
		return
	}
	rb.addText(fmt.Sprintf("[output truncated: %d of %d bytes shown]", kept, total), "")
}

// title is "<server>: <tool title>", one line, at most 512 bytes.
func title(m mapping) string {
	t := m.tool.Title
	if t == "" && m.tool.Annotations != nil {
		t = m.tool.Annotations.Title
	}
	if t == "" {
		t = m.tool.Name
	}
	s := strings.NewReplacer("\r", " ", "\n", " ").Replace(m.server.Name + ": " + t)
	return cutUTF8(s, maxTitleBytes)
}

// contentSize measures the blocks as the commit carries them, in canonical JSON, with room for
// the URI the host writes into each link.
func contentSize(blocks []block) int {
	n := 2
	for _, b := range blocks {
		n++
		if b.text != nil {
			n += len(`{"text":,"type":"text"}`) + jsonwire.QuotedLen(*b.text)
			continue
		}
		l := b.link
		n += len(`{"mimeType":,"name":,"size":,"title":,"description":,"type":"resource_link","uri":""}`) + linkURIBytes + 20 +
			jsonwire.QuotedLen(l.MimeType) + jsonwire.QuotedLen(l.Name) + jsonwire.QuotedLen(l.Title) + jsonwire.QuotedLen(l.Description)
	}
	return n
}
