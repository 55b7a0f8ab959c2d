package model

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Mock is the provider of type mock (docs/mock.md): deterministic and offline, driven by a
// script embedded in the request. The same request always gets the same response, byte for byte.
type Mock struct {
	name string
	// sleep waits for a sleep directive; tests replace it so that they never wait.
	sleep func(ctx context.Context, d time.Duration) error
}

var _ Provider = (*Mock)(nil)

// NewMock returns a mock provider under the given provider key.
func NewMock(name string) *Mock { return &Mock{name: name, sleep: sleepContext} }

// Name is the provider key.
func (m *Mock) Name() string { return m.name }

// Capabilities: the mock counts no prompt cache (its usage keeps its own shape) and takes calls
// without definitions.
func (m *Mock) Capabilities() ProviderCapabilities { return ProviderCapabilities{} }

// The script's markers and the kernel delivery prefix the scan skips
// (docs/mock.md#where-the-script-is-found).
const (
	scriptStart    = "!mock"
	scriptEnd      = "!end"
	deliveryPrefix = "<task_result"
	echoPrefix     = "echo: "
	echoNoText     = "(no text)"
)

// Complete answers from the request's script, or echoes without one.
func (m *Mock) Complete(ctx context.Context, req *Request) (*Response, error) {
	if req == nil {
		return nil, errors.New("mock: no request")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lines, round, found := findScript(req.Entries)
	if !found {
		return m.withEstimate(&Response{Text: echoText(req.Entries), Finish: FinishStop}, req, nil)
	}
	return m.play(ctx, lines, round, req)
}

// play runs the current round of a script.
func (m *Mock) play(ctx context.Context, lines []string, round int, req *Request) (*Response, error) {
	s, perr := parseScript(lines)
	if perr != nil {
		return m.withEstimate(&Response{Text: perr.text(), Finish: FinishStop}, req, nil)
	}
	directives := s.round(round)
	if len(directives) == 0 {
		return m.withEstimate(&Response{Text: fmt.Sprintf("mock script has no round %d", round), Finish: FinishStop}, req, nil)
	}
	for _, d := range directives {
		if d.kind == dirError {
			return nil, &Error{Key: d.key, Detail: d.text}
		}
	}
	var wait time.Duration
	for _, d := range directives {
		if d.kind == dirSleep {
			wait += time.Duration(d.n) * time.Millisecond
		}
	}
	if wait > 0 {
		if err := m.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}

	subst := substitutions(req.Entries, round)
	resp := &Response{}
	var says []string
	var finish Finish
	var usage *Usage
	size := 0
	for _, d := range directives {
		switch d.kind {
		case dirSay:
			t := subst.Replace(d.text)
			if len(says) > 0 {
				size++ // the line feed that joins it
			}
			says = append(says, t)
			size += len(t)
		case dirCall, dirBigcall:
			call := ToolCall{Name: d.name, ID: d.id}
			if !d.hasID {
				call.ID = "mock_r" + strconv.Itoa(round) + "_" + strconv.Itoa(len(resp.ToolCalls))
			}
			switch {
			case d.kind == dirBigcall:
				call.Arguments = `{"data":"` + strings.Repeat("x", d.n-minBigcallBytes) + `"}`
			case d.text == "":
				call.Arguments = "{}"
			default:
				call.Arguments = subst.Replace(d.text)
			}
			resp.ToolCalls = append(resp.ToolCalls, call)
			size += len(call.Name) + len(call.ID) + len(call.Arguments)
		case dirFinish:
			finish = d.finish
		case dirUsage:
			usage = &Usage{InputTokens: d.in, OutputTokens: d.out}
		}
		if size > MaxAnswerBytes {
			e := &scriptError{line: d.line, reason: fmt.Sprintf("the answer exceeds %d bytes", MaxAnswerBytes)}
			return m.withEstimate(&Response{Text: e.text(), Finish: FinishStop}, req, nil)
		}
	}
	resp.Text = strings.Join(says, "\n")
	if emit := req.Emitter(ctx); emit != nil {
		streamAnswer(emit, resp)
	}
	resp.Finish = finish
	if resp.Finish == "" {
		resp.Finish = FinishStop
		if len(resp.ToolCalls) > 0 {
			resp.Finish = FinishToolCalls
		}
	}
	return m.withEstimate(resp, req, usage)
}

// MockPiece is the size the mock streams its text in (docs/mock.md#streamed-text): a few words a
// piece, as a provider's stream delivers them, so that a follower sees the answer grow.
const MockPiece = 16

// streamAnswer hands the answer to emit as a provider's stream would: the text in pieces of about
// MockPiece bytes, cut between characters, then each call's name.
func streamAnswer(emit func(Delta), resp *Response) {
	text := resp.Text
	for len(text) > 0 {
		n := min(MockPiece, len(text))
		for n < len(text) && !utf8.RuneStart(text[n]) {
			n++
		}
		emit(Delta{Text: text[:n]})
		text = text[n:]
	}
	for _, c := range resp.ToolCalls {
		emit(Delta{ToolCall: c.Name})
	}
}

// withEstimate sets the answer's usage: the script's, or the estimate of
// docs/mock.md#usage-and-cost.
func (m *Mock) withEstimate(resp *Response, req *Request, scripted *Usage) (*Response, error) {
	if scripted != nil {
		resp.Usage = *scripted
		return resp, nil
	}
	u, err := EstimateUsage(req, resp)
	if err != nil {
		return nil, fmt.Errorf("mock: estimating the request: %w", err)
	}
	resp.Usage = u
	return resp, nil
}

// EstimateUsage is the estimate of a call's usage where no provider reported one: input the
// request's size estimate, output ceil((bytes of text + bytes of every call's name and
// arguments) ÷ 4). The real adapters mark it Estimated; the mock reports it as its own.
func EstimateUsage(req *Request, resp *Response) (Usage, error) {
	in, err := EstimateTokens(req.Entries, req.Tools)
	if err != nil {
		return Usage{}, err
	}
	out := int64(len(resp.Text))
	for _, c := range resp.ToolCalls {
		out += int64(len(c.Name) + len(c.Arguments))
	}
	return Usage{InputTokens: in, OutputTokens: ceilDiv(out, bytesPerToken)}, nil
}

func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// entryText is an entry's text parts joined with a line feed.
func entryText(e Entry) string {
	var texts []string
	for _, p := range e.Content {
		if p.Type == PartText {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// isDelivery reports whether a user entry is a kernel delivery (a <task_result> message).
func isDelivery(e Entry) bool {
	return e.Role == RoleUser && strings.HasPrefix(entryText(e), deliveryPrefix)
}

// findScript returns the script lines after !mock, and the current round: 1 + the assistant
// entries after the script entry. User entries are scanned last to first (kernel deliveries
// never), then the system entry. Within an entry, the first text part holding a !mock line wins.
func findScript(entries []Entry) (lines []string, round int, found bool) {
	scan := func(i int) bool {
		for _, p := range entries[i].Content {
			if p.Type != PartText {
				continue
			}
			if l, ok := scriptLines(p.Text); ok {
				lines = l
				round = 1
				for _, e := range entries[i+1:] {
					if e.Role == RoleAssistant {
						round++
					}
				}
				return true
			}
		}
		return false
	}
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Role == RoleUser && !isDelivery(entries[i]) && scan(i) {
			return lines, round, true
		}
	}
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Role == RoleSystem && scan(i) {
			return lines, round, true
		}
	}
	return nil, 0, false
}

// scriptLines returns the lines after the first line that is exactly !mock, up to a line that is
// exactly !end or the end of the text (surrounding spaces ignored on both markers).
func scriptLines(text string) ([]string, bool) {
	all := strings.Split(text, "\n")
	for i, l := range all {
		if strings.TrimSpace(l) != scriptStart {
			continue
		}
		rest := all[i+1:]
		for j, r := range rest {
			if strings.TrimSpace(r) == scriptEnd {
				return rest[:j], true
			}
		}
		return rest, true
	}
	return nil, false
}

// echoText answers a request without a script: echo: and the last user entry's text.
func echoText(entries []Entry) string {
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Role == RoleUser {
			if t := entryText(entries[i]); t != "" {
				return echoPrefix + t
			}
			break
		}
	}
	return echoPrefix + echoNoText
}

// substitutions builds the replacer of docs/mock.md#the-grammar. A strings.Replacer works in one
// pass, so substituted text is inserted raw and never substituted again.
func substitutions(entries []Entry, round int) *strings.Replacer {
	lastResult := ""
	var names []string
	for _, e := range entries {
		if e.Role == RoleTool || isDelivery(e) {
			lastResult = entryText(e)
		}
		for _, p := range e.Content {
			if p.Type == PartAttachment {
				names = append(names, p.Name)
			}
		}
	}
	return strings.NewReplacer(
		"{{round}}", strconv.Itoa(round),
		"{{last_result}}", lastResult,
		"{{attachments}}", strings.Join(names, attachmentSeparator),
		"{{attachment_count}}", strconv.Itoa(len(names)),
	)
}

// attachmentSeparator joins the names {{attachments}} lists: a bare comma, so a name holding
// spaces reads back unambiguously.
const attachmentSeparator = ","
