package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nexuskernel/nexus/sdk/client"
)

// inboxRow is one entry of the member inbox: an ask or a held approval (docs/api.md, "Inbox").
type inboxRow struct {
	Kind              string          `json:"kind"`
	RunPublicID       string          `json:"run_public_id"`
	WorkspacePublicID string          `json:"workspace_public_id"`
	TaskKey           string          `json:"task_key"`
	CallKey           string          `json:"call_key"`
	Prompt            string          `json:"prompt"`
	Options           []string        `json:"options"`
	ToolName          string          `json:"tool_name"`
	ToolInput         json.RawMessage `json:"tool_input"`
	DeadlineAt        string          `json:"deadline_at"`
}

func newInbox(e *env, g *globals) *cobra.Command {
	f := &clientFlags{}
	var limit int
	cmd := &cobra.Command{
		Use:   "inbox [--limit N]",
		Short: "List the asks and held approvals waiting for you, oldest first",
		Long: `List the asks and held approvals addressed to you across your workspaces. Answer an ask with
"nexus ask answer RUN KEY TEXT"; decide an approval with "nexus approve RUN KEY" or "nexus deny".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client(cmd, g, f)
			if err != nil {
				return err
			}
			res, err := c.Inbox(cmd.Context(), "", limit)
			if err != nil {
				return apiError(err)
			}
			if f.json {
				return e.raw(res.Raw)
			}
			rows := make([][]string, 0, len(res.Tasks))
			for _, raw := range res.Tasks {
				var r inboxRow
				if json.Unmarshal(raw, &r) != nil {
					continue
				}
				what := ""
				switch r.Kind {
				case "ask":
					what = oneLine(r.Prompt)
					if len(r.Options) > 0 {
						what += " [" + strings.Join(r.Options, " | ") + "]"
					}
				case "approval":
					what = r.ToolName + " " + compactJSON(r.ToolInput)
				default:
					continue // a kind this version does not know
				}
				rows = append(rows, []string{r.Kind, r.RunPublicID, r.TaskKey, what})
			}
			if len(rows) == 0 {
				_, err := fmt.Fprintln(e.stdout, "nothing waits for you")
				return err
			}
			return table(e.stdout, "KIND\tRUN\tTASK\tWHAT", rows)
		},
	}
	f.register(cmd)
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many (1..200; default 50)")
	return cmd
}

func newAsk(e *env, g *globals) *cobra.Command {
	f := &adminFlags{}
	cmd := &cobra.Command{Use: "ask", Short: "Answer the questions runs ask you"}
	f.register(cmd)
	var decline bool
	var structured string
	answer := &cobra.Command{
		Use:   "answer RUN KEY TEXT [--decline] [--structured JSON]",
		Short: "Answer an ask by its key (the ask's or its call's) with TEXT",
		Long: `Answer an ask that a run's model placed. KEY is the ask's task key (r2t0-ask-1) or its call's
(r2t0), as "nexus inbox" and "nexus run watch" show them. The model reads TEXT as the answer;
--structured stores a JSON value beside it that the model does not read. --decline refuses to
answer (the model reads an error). A second answer changes nothing and says so.`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ws, _, err := e.connectRun(cmd, g, f, args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			body := map[string]any{"content": args[2]}
			if structured != "" {
				if !json.Valid([]byte(structured)) {
					return fmt.Errorf("--structured must be JSON: %s", structured)
				}
				body["structured_content"] = json.RawMessage(structured)
			}
			if decline {
				body["outcome"] = "failed"
			}
			res, err := c.Resolve(ctx, ws, args[0], args[1], body)
			if err != nil {
				return apiError(err)
			}
			if f.json {
				return e.raw(res.Raw)
			}
			if !res.Applied {
				return fmt.Errorf("ask %s was already settled (%s): this answer changed nothing", res.Task.Key, res.Task.Status)
			}
			_, err = fmt.Fprintf(e.stdout, "answered %s; the run goes on (nexus run watch %s)\n", res.Task.Key, args[0])
			return err
		},
	}
	answer.Flags().BoolVar(&decline, "decline", false, "decline to answer: the ask fails and the model reads that")
	answer.Flags().StringVar(&structured, "structured", "", "a JSON value stored with the answer")
	f.registerWorkspace(answer)
	cmd.AddCommand(answer)
	return cmd
}

// newDecision is `nexus approve` or `nexus deny`: the decision on a held tool call.
func newDecision(e *env, g *globals, approve bool) *cobra.Command {
	f := &adminFlags{}
	var reason string
	use, short := "approve RUN KEY", "Approve a tool call held for approval; it runs"
	if !approve {
		use, short = "deny RUN KEY [--reason TEXT]", "Deny a tool call held for approval; the model reads the refusal"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ws, _, err := e.connectRun(cmd, g, f, args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var res *client.TaskResponse
			if approve {
				res, err = c.Approve(ctx, ws, args[0], args[1])
			} else {
				res, err = c.Deny(ctx, ws, args[0], args[1], reason)
			}
			if err != nil {
				return apiError(err)
			}
			if f.json {
				return e.raw(res.Raw)
			}
			verb := "approved"
			if !approve {
				verb = "denied"
			}
			_, err = fmt.Fprintf(e.stdout, "%s %s %s: %s\n", verb, res.Task.Key, res.Task.ToolName, res.Task.Status)
			return err
		},
	}
	f.register(cmd)
	f.registerWorkspace(cmd)
	if !approve {
		cmd.Flags().StringVar(&reason, "reason", "", "why, for the model (its first 256 bytes)")
	}
	return cmd
}
