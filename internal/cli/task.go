package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexuskernel/nexus/sdk/client"
)

func newTask(e *env, g *globals) *cobra.Command {
	f := &adminFlags{}
	cmd := &cobra.Command{Use: "task", Short: "Read one task of a run whole"}
	f.register(cmd)

	var request bool
	show := &cobra.Command{
		Use:   "show RUN KEY [--request]",
		Short: "Show a task: its input, result, usage and cost, error and timings",
		Long: `Show one task of a run whole (docs/api.md, "Tasks and decisions"), where "nexus run show" lists
the brief trace rows: a model task's prompt, answer, calls, token usage and cost; a tool task's
input and result, structured content included; the error of a task that did not complete; and
when it was created, became ready, was dispatched, started and settled. KEY is the task's key as
"nexus run show" lists it. --request prints a model task's sealed request instead, exactly as it
was sent to the provider. --json prints the API's body.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ws, _, err := e.connectRun(cmd, g, f, args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if request {
				body, err := c.SealedRequest(ctx, ws, args[0], args[1])
				if err != nil {
					return apiError(err)
				}
				if err := e.raw(body); err != nil {
					return err
				}
				if len(body) > 0 && body[len(body)-1] != '\n' {
					_, err = fmt.Fprintln(e.stdout)
				}
				return err
			}
			res, err := c.Task(ctx, ws, args[0], args[1])
			if err != nil {
				return apiError(err)
			}
			if f.json {
				return e.raw(res.Raw)
			}
			return printTask(e.stdout, args[0], &res.Task)
		},
	}
	show.Flags().BoolVar(&request, "request", false, "print a model task's sealed request, byte for byte")
	f.registerWorkspace(show)
	cmd.AddCommand(show)
	return cmd
}

// taskUsage is a model task's usage as the API serves it (docs/providers.md, "Usage and cost").
type taskUsage struct {
	InputTokens           int64 `json:"input_tokens"`
	OutputTokens          int64 `json:"output_tokens"`
	CachedInputTokens     int64 `json:"cached_input_tokens"`
	CacheWriteInputTokens int64 `json:"cache_write_input_tokens"`
	Estimated             bool  `json:"estimated"`
	Cost                  *struct {
		Amount   string `json:"amount"`
		Currency string `json:"currency"`
	} `json:"cost"`
}

// printTask writes one task whole, a label per line; a value of several lines continues under
// its label.
func printTask(w io.Writer, run string, t *client.Task) error {
	var pairs []string
	add := func(label, value string) {
		if value != "" {
			pairs = append(pairs, label, value)
		}
	}
	opt := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	add("task", t.Key)
	add("run", run)
	add("kind", t.Kind)
	add("status", t.Status)
	add("origin", t.Origin)
	add("model", t.Model)
	if t.ToolName != "" {
		tool := t.ToolName
		if t.ToolAlias != "" {
			tool += " (called as " + t.ToolAlias + ")"
		}
		add("tool", tool)
	}
	add("instructions", opt(t.Instructions))
	switch {
	case t.Prompt != nil:
		add("input", *t.Prompt)
	case len(t.ToolInput) > 0:
		add("input", compactJSON(t.ToolInput))
	}
	if len(t.Attachments) > 0 && string(t.Attachments) != "[]" {
		add("attachments", compactJSON(t.Attachments))
	}
	for _, call := range t.Calls {
		add("call", call.TaskKey+" "+call.Name)
	}
	add("finish", t.Finish)
	switch {
	case t.Output != nil:
		add("content", *t.Output)
	case len(t.Content) > 0:
		add("content", compactJSON(t.Content))
	}
	if t.StructuredContent != nil {
		add("structured", compactJSON(*t.StructuredContent))
	}
	if t.IsError != nil && *t.IsError {
		add("is error", "true")
	}
	add("title", opt(t.Title))
	if len(t.Usage) > 0 && string(t.Usage) != "null" {
		var u taskUsage
		if json.Unmarshal(t.Usage, &u) == nil {
			s := fmt.Sprintf("%d input tokens (%d cached, %d written to the cache), %d output tokens",
				u.InputTokens, u.CachedInputTokens, u.CacheWriteInputTokens, u.OutputTokens)
			if u.Estimated {
				s += ", estimated"
			}
			add("usage", s)
			if u.Cost != nil {
				add("cost", u.Cost.Amount+" "+u.Cost.Currency)
			}
		}
	}
	if t.Error != nil {
		d := t.Error.Key
		if t.Error.Detail != "" {
			d += ": " + t.Error.Detail
		}
		add("error", d)
	}
	if t.Attempts != nil && *t.Attempts > 1 {
		add("attempts", fmt.Sprint(*t.Attempts))
	}
	add("created", t.CreatedAt)
	add("ready", opt(t.ReadyAt))
	add("dispatched", opt(t.DispatchedAt))
	add("started", opt(t.StartedAt))
	add("deadline", opt(t.DeadlineAt))
	add("completed", opt(t.CompletedAt))
	add("delivered", opt(t.ResultDeliveredAt))
	if took := duration(t.CreatedAt, opt(t.CompletedAt)); took != "" {
		add("took", took+" from created to completed")
	}
	return block(w, pairs...)
}

// duration is the time from one API timestamp to another, "" unless both are read.
func duration(from, to string) string {
	a, err1 := time.Parse(time.RFC3339Nano, from)
	b, err2 := time.Parse(time.RFC3339Nano, to)
	if from == "" || to == "" || err1 != nil || err2 != nil {
		return ""
	}
	return b.Sub(a).String()
}

// block writes label/value pairs with the values aligned after the longest label; a value's
// later lines are indented to its column.
func block(w io.Writer, pairs ...string) error {
	width := 0
	for i := 0; i < len(pairs); i += 2 {
		width = max(width, len(pairs[i]))
	}
	pad := strings.Repeat(" ", width+2)
	var b strings.Builder
	for i := 0; i+1 < len(pairs); i += 2 {
		lines := strings.Split(strings.TrimRight(pairs[i+1], "\n"), "\n")
		fmt.Fprintf(&b, "%-*s%s\n", width+2, pairs[i], lines[0])
		for _, l := range lines[1:] {
			b.WriteString(pad + l + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
