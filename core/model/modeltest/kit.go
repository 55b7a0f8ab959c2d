package modeltest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/model"
)

// TestKey is the distinctive credential every case runs with (NEXUS_TEST_KEY).
const TestKey = "nexus-test-key-7b1e0c"

// Clock is a fake retry clock: Sleep advances it at once and records the wait.
type Clock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

// NewClock starts a fake clock at now.
func NewClock(now time.Time) *Clock { return &Clock{now: now} }

// Now is the fake time.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

// Sleep records d and advances the clock, unless ctx has ended.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	return nil
}

// WaitsMS are the recorded waits in milliseconds.
func (c *Clock) WaitsMS() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []int64{}
	for _, w := range c.waits {
		out = append(out, w.Milliseconds())
	}
	return out
}

// Media serves upload bytes by public id.
type Media map[string][]byte

// Open opens an upload's bytes.
func (m Media) Open(ctx context.Context, id string) (io.ReadCloser, error) {
	b, ok := m[id]
	if !ok {
		return nil, fmt.Errorf("no upload %s", id)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

// DecodeUploads reads an uploads/ID section: base64 text.
func DecodeUploads(text string) ([]byte, error) {
	return base64.StdEncoding.DecodeString(strings.Join(strings.Fields(text), ""))
}

type sealedWire struct {
	Request struct {
		Model          string        `json:"model"`
		SealedAt       string        `json:"sealed_at"`
		Entries        []model.Entry `json:"entries"`
		RequestOptions struct {
			Tools           []model.ToolSchema `json:"tools"`
			ToolChoice      string             `json:"tool_choice"`
			MaxOutputTokens int                `json:"max_output_tokens"`
			Reasoning       *struct {
				Thinking     string `json:"thinking"`
				BudgetTokens int    `json:"budget_tokens"`
				Effort       string `json:"effort"`
			} `json:"reasoning"`
			ToolSearch *struct {
				Mode    string `json:"mode"`
				Variant string `json:"variant"`
			} `json:"tool_search"`
		} `json:"request_options"`
	} `json:"request"`
}

// ParseSealed reads a sealed request as the request route serves it into the value a provider
// receives; Model is left to the caller (the catalog's id).
func ParseSealed(raw []byte) (*model.Request, error) {
	var w sealedWire
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("sealed.json: %w", err)
	}
	o := w.Request.RequestOptions
	req := &model.Request{Ref: w.Request.Model, Entries: w.Request.Entries, Tools: o.Tools, ToolChoice: o.ToolChoice, MaxOutputTokens: o.MaxOutputTokens}
	if r := o.Reasoning; r != nil {
		req.Reasoning = &model.Reasoning{Thinking: r.Thinking, BudgetTokens: r.BudgetTokens, Effort: r.Effort}
	}
	if s := o.ToolSearch; s != nil {
		req.ToolSearch = s.Variant
	}
	return req, nil
}

// Outcome is the neutral result of a model call, as want/result.json holds it.
type Outcome struct {
	Response *ResponseJSON `json:"response,omitempty"`
	Error    *ErrorJSON    `json:"error,omitempty"`
	Canceled bool          `json:"canceled,omitempty"`
	Attempts int           `json:"attempts"`
	WaitsMS  []int64       `json:"waits_ms"`
}

// ResponseJSON is a Response in the test kit's form.
type ResponseJSON struct {
	Content   []json.RawMessage `json:"content"`
	Text      string            `json:"text"`
	ToolCalls []model.ToolCall  `json:"tool_calls"`
	Finish    model.Finish      `json:"finish"`
	Usage     UsageJSON         `json:"usage"`
}

// UsageJSON is a Usage in the test kit's form.
type UsageJSON struct {
	InputTokens           int64 `json:"input_tokens"`
	OutputTokens          int64 `json:"output_tokens"`
	CachedInputTokens     int64 `json:"cached_input_tokens"`
	CacheWriteInputTokens int64 `json:"cache_write_input_tokens"`
	Estimated             bool  `json:"estimated,omitempty"`
}

// ErrorJSON is a *model.Error in the test kit's form.
type ErrorJSON struct {
	Key           string `json:"key"`
	Detail        string `json:"detail"`
	Retryable     bool   `json:"retryable"`
	Status        int    `json:"status"`
	RefusedUpload string `json:"refused_upload,omitempty"`
}

// OutcomeOf writes a call's result in the kit's form.
func OutcomeOf(resp *model.Response, err error, attempts int, waits []int64) (Outcome, error) {
	o := Outcome{Attempts: attempts, WaitsMS: waits}
	if err != nil {
		var me *model.Error
		switch {
		case errors.Is(err, context.Canceled):
			o.Canceled = true
		case errors.As(err, &me):
			o.Error = &ErrorJSON{Key: me.Key, Detail: me.Detail, Retryable: me.Retryable, Status: me.Status, RefusedUpload: me.RefusedUpload}
		default:
			return o, fmt.Errorf("a plain error: %w", err)
		}
		return o, nil
	}
	r := &ResponseJSON{Content: []json.RawMessage{}, Text: resp.Text, ToolCalls: resp.ToolCalls, Finish: resp.Finish,
		Usage: UsageJSON{resp.Usage.InputTokens, resp.Usage.OutputTokens, resp.Usage.CachedInputTokens, resp.Usage.CacheWriteInputTokens, resp.Usage.Estimated}}
	if r.ToolCalls == nil {
		r.ToolCalls = []model.ToolCall{}
	}
	for _, p := range resp.Content {
		b, err := p.MarshalJSON()
		if err != nil {
			return o, err
		}
		r.Content = append(r.Content, b)
	}
	o.Response = r
	return o, nil
}

// Indent re-indents JSON so that only whitespace differs between equal documents.
func Indent(b []byte) (string, error) {
	var out bytes.Buffer
	if err := json.Indent(&out, bytes.TrimSpace(b), "", "  "); err != nil {
		return "", err
	}
	return out.String(), nil
}

func jsonEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}

// SideBySide runs each operation once per iteration, rotating which goes first, so that every
// side of a comparison sees the same machine load; it reports each side's mean time and the
// ratio of the first to each other one (benchmarks state their goals as such ratios).
func SideBySide(b *testing.B, names []string, ops ...func()) []time.Duration {
	spent := make([]time.Duration, len(ops))
	n := 0
	for ; b.Loop(); n++ {
		for k := range ops {
			j := (n + k) % len(ops)
			start := time.Now()
			ops[j]()
			spent[j] += time.Since(start)
		}
	}
	mean := make([]time.Duration, len(ops))
	for j, name := range names {
		mean[j] = spent[j] / time.Duration(max(n, 1))
		b.ReportMetric(float64(spent[j].Nanoseconds())/float64(max(n, 1)), name+"-ns/op")
		if j > 0 {
			b.ReportMetric(float64(spent[0])/float64(spent[j]), "ratio-vs-"+name)
		}
	}
	return mean
}

// ScanEvents is the baseline of the stream benchmarks: bufio.Scanner over the lines, each
// "data: " line's JSON handed to decode ([DONE] excepted); it returns how many were decoded.
func ScanEvents(b *testing.B, r io.Reader, decode func([]byte) error) int {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	n := 0
	for sc.Scan() {
		line := sc.Bytes()
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok || string(data) == "[DONE]" {
			continue
		}
		if err := decode(data); err != nil {
			b.Fatal(err)
		}
		n++
	}
	return n
}
