package projection

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nexuskernel/nexus/core/declare/jsonv"
)

// ErrNotSealedRequest is wrapped by every ParseRequest error.
var ErrNotSealedRequest = errors.New("projection: not a sealed request")

// ParseRequest reads sealed bytes back into a Request; Encode of the result gives the same
// bytes for anything Encode wrote.
func ParseRequest(raw []byte) (*Request, error) {
	v, err := jsonv.Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotSealedRequest, err)
	}
	req, ok := v.Get("request")
	if !ok || !req.IsObject() {
		return nil, fmt.Errorf("%w: no request object", ErrNotSealedRequest)
	}
	r := &Request{}
	var problems []string
	str := func(obj jsonv.Value, key string) string {
		s, ok := obj.GetString(key)
		if !ok {
			problems = append(problems, key)
		}
		return s
	}
	r.Model = str(req, "model")
	if r.SealedAt, err = time.Parse(sealedAtLayout, str(req, "sealed_at")); err != nil {
		problems = append(problems, "sealed_at")
	}
	entries, _ := req.Get("entries")
	for _, ev := range entries.Items() {
		e := Entry{Role: Role(str(ev, "role"))}
		if e.Role == RoleTool {
			e.ToolCallID = str(ev, "tool_call_id")
			e.Name = str(ev, "name")
			b, _ := ev.Get("is_error")
			e.IsError, _ = b.AsBool()
		}
		content, _ := ev.Get("content")
		for _, pv := range content.Items() {
			p := Part{Type: PartType(str(pv, "type"))}
			if p.Type == PartAttachment {
				p.UploadPublicID, p.MediaType, p.Name = str(pv, "upload_public_id"), str(pv, "media_type"), str(pv, "name")
				p.SHA256 = str(pv, "sha256")
				p.SourceTask, _ = pv.GetString("source_task")
				n, _ := pv.Get("byte_size")
				text, _ := n.NumberText()
				if p.ByteSize, err = strconv.ParseInt(text, 10, 64); err != nil {
					problems = append(problems, "byte_size")
				}
			} else {
				p.Text = str(pv, "text")
			}
			e.Content = append(e.Content, p)
		}
		calls, _ := ev.Get("tool_calls")
		for _, cv := range calls.Items() {
			e.ToolCalls = append(e.ToolCalls, ToolCall{ID: str(cv, "id"), Name: str(cv, "name"), Arguments: str(cv, "arguments")})
		}
		r.Entries = append(r.Entries, e)
	}
	opts, _ := req.Get("request_options")
	tools, _ := opts.Get("tools")
	r.Tools = append([]jsonv.Value{}, tools.Items()...)
	max, _ := opts.Get("max_output_tokens")
	text, _ := max.NumberText()
	if r.MaxOutputTokens, err = strconv.ParseInt(text, 10, 64); err != nil {
		problems = append(problems, "max_output_tokens")
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w: missing or mistyped %v", ErrNotSealedRequest, problems)
	}
	return r, nil
}
