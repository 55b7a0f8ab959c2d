package openai

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/model/wire"
)

// location is a wire part of the body: messages[Message].content[Part].
type location struct{ Message, Part int }

// Encoded is a request body and the map from its attachment parts to the uploads they carry.
type Encoded struct {
	Body    []byte
	Uploads map[location]string
}

// Body builds the request body of a sealed request (docs/providers.md, the openai request).
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
	ids, err := wire.WireIDs(req.Entries, wire.MaxOpenAIIDLen)
	if err != nil {
		return nil, err
	}
	out := &Encoded{Uploads: map[location]string{}}
	b := &wire.Body{B: make([]byte, 0, 4096)}
	b.Raw(`{"model":`)
	b.String(req.Model)
	b.Raw(`,"messages":[`)
	msg := 0
	for i, e := range req.Entries {
		b.Sep()
		switch e.Role {
		case model.RoleSystem:
			b.Raw(`{"role":"system","content":`)
			b.String(joinText(e.Content))
			b.Raw(`}`)
		case model.RoleUser:
			b.Raw(`{"role":"user","content":`)
			if len(e.Content) == 1 && e.Content[0].Type == model.PartText {
				b.String(e.Content[0].Text)
			} else {
				b.Raw(`[`)
				part := 0
				for _, pt := range e.Content {
					switch pt.Type {
					case model.PartText:
						b.Sep()
						b.Raw(`{"type":"text","text":`)
						b.String(pt.Text)
						b.Raw(`}`)
					case model.PartAttachment:
						b.Sep()
						if err := p.attachment(ctx, b, req.Media, pt); err != nil {
							return nil, err
						}
						out.Uploads[location{msg, part}] = pt.UploadPublicID
					default:
						continue
					}
					part++
				}
				b.Raw(`]`)
			}
			b.Raw(`}`)
		case model.RoleAssistant:
			b.Raw(`{"role":"assistant","content":`)
			text := joinText(e.Content)
			if text == "" && len(e.ToolCalls) > 0 {
				b.Raw(`null`)
			} else {
				b.String(text)
			}
			if len(e.ToolCalls) > 0 {
				b.Raw(`,"tool_calls":[`)
				for j, c := range e.ToolCalls {
					b.Sep()
					raw, _, _ := wire.ObjectArguments(c.Arguments)
					b.Raw(`{"id":`)
					b.String(ids.Calls[i][j])
					b.Raw(`,"type":"function","function":{"name":`)
					b.String(c.Name)
					b.Raw(`,"arguments":`)
					b.String(raw)
					b.Raw(`}}`)
				}
				b.Raw(`]`)
			}
			b.Raw(`}`)
		case model.RoleTool:
			b.Raw(`{"role":"tool","tool_call_id":`)
			b.String(ids.Tools[i])
			b.Raw(`,"content":`)
			b.String(joinText(e.Content))
			b.Raw(`}`)
		default:
			return nil, &model.Error{Key: model.KeyProviderError, Detail: fmt.Sprintf("sealed request entry %d has role %q", i, e.Role)}
		}
		msg++
	}
	b.Raw(`]`)
	if len(req.Tools) > 0 {
		b.Raw(`,"tools":[`)
		for _, t := range req.Tools {
			b.Sep()
			b.Raw(`{"type":"function","function":{"name":`)
			b.String(t.Name)
			if t.Description != "" {
				b.Raw(`,"description":`)
				b.String(t.Description)
			}
			if len(t.Parameters) > 0 {
				b.Raw(`,"parameters":`)
				if err := b.Compact(t.Parameters); err != nil {
					return nil, &model.Error{Key: model.KeyProviderError, Detail: fmt.Sprintf("tool %q: parameters are not JSON", t.Name)}
				}
			}
			if t.Strict != nil {
				b.Raw(`,"strict":` + strconv.FormatBool(*t.Strict))
			}
			b.Raw(`}}`)
		}
		b.Raw(`],"tool_choice":`)
		if req.ToolChoice == "none" {
			b.Raw(`"none"`)
		} else {
			b.Raw(`"auto"`)
		}
	}
	b.Key(p.Cfg.MaxTokensField)
	b.Raw(strconv.Itoa(req.MaxOutputTokens))
	if req.Reasoning != nil && req.Reasoning.Effort != "" {
		b.Raw(`,"reasoning_effort":`)
		b.String(req.Reasoning.Effort)
	}
	if p.Cfg.Streams() {
		b.Raw(`,"stream":true`)
		if *p.Cfg.StreamUsage {
			b.Raw(`,"stream_options":{"include_usage":true}`)
		}
	}
	for _, f := range m.ExtraBody {
		b.Key(f.Key)
		b.Bytes(f.Value)
	}
	b.Raw(`}`)
	out.Body = b.B
	return out, nil
}

func (p *Provider) attachment(ctx context.Context, b *wire.Body, media model.MediaReader, pt model.Part) error {
	if pt.MediaType == "application/pdf" {
		b.Raw(`{"type":"file","file":{"filename":`)
		b.String(pt.Name)
		b.Raw(`,"file_data":"data:application/pdf;base64,`)
	} else {
		b.Raw(`{"type":"image_url","image_url":{"url":"data:`)
		b.Raw(strings.ReplaceAll(pt.MediaType, `"`, ``))
		b.Raw(`;base64,`)
	}
	var err error
	if b.B, err = wire.AppendBase64(ctx, b.B, media, pt); err != nil {
		return err
	}
	b.Raw(`"}}`)
	return nil
}

// joinText is an entry's text parts joined with a blank line.
func joinText(parts []model.Part) string {
	var texts []string
	for _, p := range parts {
		if p.Type == model.PartText {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n\n")
}
