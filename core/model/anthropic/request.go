package anthropic

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/model/wire"
)

// Block kinds of a wire message.
const (
	kindText       = "text"
	kindMedia      = "media"
	kindToolUse    = "tool_use"
	kindToolResult = "tool_result"
	kindProvider   = "provider"
)

// block is one content block as written, its closing brace last, so that a cache marker can be
// added before it.
type block struct {
	b      []byte
	kind   string
	id     string // tool_use: its id; tool_result: the id it answers
	upload string // media: the upload it carries
}

// wmsg is one wire message after merging consecutive entries of the same wire role.
type wmsg struct {
	role   string
	blocks []block
}

// location is a wire block: messages.Message.content.Block.
type location struct{ Message, Block int }

// Encoded is a request body and the map from its attachment blocks to their uploads.
type Encoded struct {
	Body    []byte
	Uploads map[location]string
}

// Body builds the request body of a sealed request (docs/providers.md, the anthropic request).
// The same request and upload bytes give the same body, byte for byte.
func (p *Provider) Body(ctx context.Context, req *model.Request) ([]byte, error) {
	e, err := p.encode(ctx, req)
	if err != nil {
		return nil, err
	}
	return e.Body, nil
}

func (p *Provider) encode(ctx context.Context, req *model.Request) (*Encoded, error) {
	m := p.Models[req.Ref]
	if err := wire.CheckTools(req, m); err != nil {
		return nil, err
	}
	ids, err := wire.WireIDs(req.Entries, wire.MaxAnthropicIDLen)
	if err != nil {
		return nil, err
	}
	var system []block
	var msgs []wmsg
	for i, e := range req.Entries {
		role := "user"
		var blocks []block
		switch e.Role {
		case model.RoleSystem:
			for _, pt := range e.Content {
				if pt.Type == model.PartText && strings.TrimSpace(pt.Text) != "" {
					system = append(system, textBlock(pt.Text))
				}
			}
			continue
		case model.RoleUser:
			for _, pt := range e.Content {
				switch pt.Type {
				case model.PartText:
					if strings.TrimSpace(pt.Text) != "" {
						blocks = append(blocks, textBlock(pt.Text))
					}
				case model.PartAttachment:
					b, err := mediaBlock(ctx, req.Media, pt)
					if err != nil {
						return nil, err
					}
					blocks = append(blocks, b)
				}
			}
		case model.RoleAssistant:
			role = "assistant"
			for _, pt := range e.Content {
				switch {
				case pt.Type == model.PartProviderBlock && pt.Format == model.ProviderTypeAnthropic:
					b := &wire.Body{}
					if err := b.Compact(pt.Block); err != nil {
						return nil, &model.Error{Key: model.KeyProviderError, Detail: fmt.Sprintf("sealed request entry %d holds a provider block that is not JSON", i)}
					}
					blocks = append(blocks, block{b: b.B, kind: kindProvider})
				case pt.Type == model.PartText && strings.TrimSpace(pt.Text) != "":
					blocks = append(blocks, textBlock(pt.Text))
				}
			}
			for j, c := range e.ToolCalls {
				id := ids.Calls[i][j]
				_, input, _ := wire.ObjectArguments(c.Arguments)
				b := &wire.Body{}
				b.Raw(`{"type":"tool_use","id":`)
				b.String(id)
				b.Raw(`,"name":`)
				b.String(c.Name)
				b.Raw(`,"input":`)
				b.Bytes(input)
				b.Raw(`}`)
				blocks = append(blocks, block{b: b.B, kind: kindToolUse, id: id})
			}
		case model.RoleTool:
			id := ids.Tools[i]
			b := &wire.Body{}
			b.Raw(`{"type":"tool_result","tool_use_id":`)
			b.String(id)
			if text := joinText(e.Content); text != "" {
				b.Raw(`,"content":[{"type":"text","text":`)
				b.String(text)
				b.Raw(`}]`)
			}
			if e.IsError {
				b.Raw(`,"is_error":true`)
			}
			b.Raw(`}`)
			blocks = append(blocks, block{b: b.B, kind: kindToolResult, id: id})
		default:
			return nil, &model.Error{Key: model.KeyProviderError, Detail: fmt.Sprintf("sealed request entry %d has role %q", i, e.Role)}
		}
		if len(blocks) == 0 {
			continue
		}
		if n := len(msgs); n > 0 && msgs[n-1].role == role {
			msgs[n-1].blocks = append(msgs[n-1].blocks, blocks...)
		} else {
			msgs = append(msgs, wmsg{role: role, blocks: blocks})
		}
	}
	if err := checkResultOrder(msgs); err != nil {
		return nil, err
	}
	tools := p.tools(req)
	if *p.Cfg.PromptCache {
		markCache(tools, system, msgs)
	}
	out := &Encoded{Uploads: map[location]string{}}
	b := &wire.Body{B: make([]byte, 0, 4096)}
	b.Raw(`{"model":`)
	b.String(req.Model)
	b.Raw(`,"max_tokens":` + strconv.Itoa(req.MaxOutputTokens))
	if len(system) > 0 {
		b.Raw(`,"system":[`)
		for _, s := range system {
			b.Sep()
			b.Bytes(s.b)
		}
		b.Raw(`]`)
	}
	b.Raw(`,"messages":[`)
	for n, msg := range msgs {
		b.Sep()
		b.Raw(`{"role":"` + msg.role + `","content":[`)
		for k, bl := range msg.blocks {
			b.Sep()
			b.Bytes(bl.b)
			if bl.upload != "" {
				out.Uploads[location{n, k}] = bl.upload
			}
		}
		b.Raw(`]}`)
	}
	b.Raw(`]`)
	if len(tools) > 0 {
		b.Raw(`,"tools":[`)
		for _, t := range tools {
			b.Sep()
			b.Bytes(t.b)
		}
		b.Raw(`],"tool_choice":`)
		if req.ToolChoice == "none" {
			b.Raw(`{"type":"none"}`)
		} else {
			b.Raw(`{"type":"auto"}`)
		}
	}
	if r := req.Reasoning; r != nil {
		switch r.Thinking {
		case model.ThinkingEnabled:
			b.Raw(`,"thinking":{"type":"enabled","budget_tokens":` + strconv.Itoa(r.BudgetTokens) + `}`)
		case model.ThinkingAdaptive:
			b.Raw(`,"thinking":{"type":"adaptive"}`)
		case model.ThinkingDisabled:
			b.Raw(`,"thinking":{"type":"disabled"}`)
		}
		if r.Effort != "" {
			b.Raw(`,"output_config":{"effort":`)
			b.String(r.Effort)
			b.Raw(`}`)
		}
	}
	if p.Cfg.Streams() {
		b.Raw(`,"stream":true`)
	}
	for _, f := range m.ExtraBody {
		b.Key(f.Key)
		b.Bytes(f.Value)
	}
	b.Raw(`}`)
	out.Body = b.B
	return out, nil
}

// searchTool is the Anthropic tool search tool of each variant (native deferral).
var searchTool = map[string]string{
	model.SearchBM25:  `{"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25"}`,
	model.SearchRegex: `{"type":"tool_search_tool_regex_20251119","name":"tool_search_tool_regex"}`,
}

// tools writes the tool definitions: the search tool first in native mode, then each offered
// entry, deferred ones flagged.
func (p *Provider) tools(req *model.Request) []block {
	var out []block
	if t, ok := searchTool[req.ToolSearch]; ok {
		out = append(out, block{b: []byte(t), kind: "search"})
	}
	for _, t := range req.Tools {
		b := &wire.Body{}
		b.Raw(`{"name":`)
		b.String(t.Name)
		if t.Description != "" {
			b.Raw(`,"description":`)
			b.String(t.Description)
		}
		b.Raw(`,"input_schema":`)
		if len(t.Parameters) == 0 || b.Compact(t.Parameters) != nil {
			b.Raw(`{"type":"object","properties":{}}`)
		}
		if t.Strict != nil && *t.Strict {
			b.Raw(`,"strict":true`)
		}
		kind := "tool"
		if t.DeferLoading {
			b.Raw(`,"defer_loading":true`)
			kind = "deferred"
		}
		b.Raw(`}`)
		out = append(out, block{b: b.B, kind: kind})
	}
	return out
}

func textBlock(text string) block {
	b := &wire.Body{}
	b.Raw(`{"type":"text","text":`)
	b.String(text)
	b.Raw(`}`)
	return block{b: b.B, kind: kindText}
}

func mediaBlock(ctx context.Context, media model.MediaReader, pt model.Part) (block, error) {
	b := &wire.Body{}
	typ := "image"
	if pt.MediaType == "application/pdf" {
		typ = "document"
	}
	b.Raw(`{"type":"` + typ + `","source":{"type":"base64","media_type":`)
	b.String(pt.MediaType)
	b.Raw(`,"data":"`)
	var err error
	if b.B, err = wire.AppendBase64(ctx, b.B, media, pt); err != nil {
		return block{}, err
	}
	b.Raw(`"}`)
	if typ == "document" {
		b.Raw(`,"title":`)
		b.String(pt.Name)
	}
	b.Raw(`}`)
	return block{b: b.B, kind: kindMedia, upload: pt.UploadPublicID}, nil
}

// checkResultOrder is the guard: every user message after an assistant message with tool_use
// blocks begins with exactly one tool_result per call, in call order, and no tool_result
// appears elsewhere. Sealed requests hold this by construction; a violation is a kernel bug.
func checkResultOrder(msgs []wmsg) error {
	fail := func(n int) error {
		return &model.Error{Key: model.KeyProviderError, Detail: fmt.Sprintf("sealed request breaks tool_result order at message %d", n)}
	}
	for n, m := range msgs {
		var uses []string
		if n > 0 && msgs[n-1].role == "assistant" {
			for _, b := range msgs[n-1].blocks {
				if b.kind == kindToolUse {
					uses = append(uses, b.id)
				}
			}
		}
		if m.role == "assistant" {
			for _, b := range m.blocks {
				if b.kind == kindToolResult {
					return fail(n)
				}
			}
			continue
		}
		for k, b := range m.blocks {
			if k < len(uses) {
				if b.kind != kindToolResult || b.id != uses[k] {
					return fail(n)
				}
			} else if b.kind == kindToolResult {
				return fail(n)
			}
		}
		if len(m.blocks) < len(uses) {
			return fail(n)
		}
	}
	if n := len(msgs); n > 0 && msgs[n-1].role == "assistant" {
		for _, b := range msgs[n-1].blocks {
			if b.kind == kindToolUse {
				return fail(n)
			}
		}
	}
	return nil
}

func joinText(parts []model.Part) string {
	var texts []string
	for _, p := range parts {
		if p.Type == model.PartText {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n\n")
}
