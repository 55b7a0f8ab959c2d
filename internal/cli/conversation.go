package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexuskernel/nexus/sdk/client"
)

// Turn statuses (docs/api.md, "Conversations").
const (
	turnCompleted = "completed"
	turnFailed    = "failed"
	turnCanceled  = "canceled"
)

func newConversation(e *env, g *globals) *cobra.Command {
	f := &adminFlags{}
	cmd := &cobra.Command{Use: "conversation", Short: "Create conversations, send them messages and read their history"}
	f.register(cmd)

	var agent, title, runner string
	create := &cobra.Command{
		Use:   "create --agent AGENT [--title TEXT] [--runner RUNNER]",
		Short: "Create a conversation answered by an agent of the workspace",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ws, err := e.connect(cmd, g, f)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			conv := map[string]any{}
			if agent != "" {
				id, err := resolveMember(ctx, c, ws, agent, "agent")
				if err != nil {
					return err
				}
				conv["answering_agent_public_id"] = id
			}
			if title != "" {
				conv["title"] = title
			}
			if runner != "" {
				id, err := resolveRunner(ctx, c, ws, runner)
				if err != nil {
					return err
				}
				conv["default_runner_executor_public_id"] = id
			}
			res, err := c.CreateConversation(ctx, ws, conv)
			if err != nil {
				return apiError(err)
			}
			switch {
			case f.json:
				return e.raw(res.Raw)
			case f.quiet:
				_, err := fmt.Fprintln(e.stdout, res.Conversation.PublicID)
				return err
			}
			cv := res.Conversation
			return fields(e.stdout, "conversation", cv.PublicID, "workspace", ws, "answered by", cv.AnsweringAgentPublicID, "status", cv.Status)
		},
	}
	create.Flags().StringVar(&agent, "agent", "", "the answering agent, handle or public id (required for a user)")
	create.Flags().StringVar(&title, "title", "", "the conversation's title")
	create.Flags().StringVar(&runner, "runner", "", "the conversation's default runner, public id or display name")
	f.registerWorkspace(create)
	f.registerQuiet(create, "the conversation's public id")

	var model, file, idem string
	var noWait bool
	var timeout time.Duration
	send := &cobra.Command{
		Use:   "send CONVERSATION (TEXT | --file FILE) [--model REF] [--no-wait]",
		Short: "Post a message and print the answer to it",
		Long: `Post a message into a conversation. Its turn queues behind the turns before it; the command
waits for the turn and prints its answer (or, when the answer waits for a person, the asks and
approvals to decide, as "nexus run watch" does). --no-wait prints the turn and returns at once.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var text string
			switch {
			case len(args) == 2 && file != "":
				return usageErrorf("pass the message as TEXT or --file, not both")
			case len(args) == 2:
				text = args[1]
			case file != "":
				b, err := e.readInput(file)
				if err != nil {
					return err
				}
				text = string(b)
			default:
				return usageErrorf("pass the message as TEXT or --file FILE")
			}
			c, ws, err := e.connect(cmd, g, f)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			msg := map[string]any{"text": text}
			if model != "" {
				msg["model"] = model
			}
			res, err := c.PostMessage(ctx, ws, args[0], msg, idem)
			if err != nil {
				return apiError(err)
			}
			if noWait {
				if f.json {
					return e.raw(res.Raw)
				}
				return fields(e.stdout, "turn", res.Turn.PublicID, "position", fmt.Sprint(res.Turn.Position),
					"status", res.Turn.Status, "run", res.Turn.RunPublicID)
			}
			return e.watchTurn(ctx, c, f, ws, args[0], res.Turn, timeout)
		},
	}
	send.Flags().StringVar(&file, "file", "", "read the message from FILE (- for standard input)")
	send.Flags().StringVar(&model, "model", "", "provider/model for this turn (default: the agent's, else the deployment's)")
	send.Flags().StringVar(&idem, "idempotency-key", "", "a key that makes a retried send answer the first turn")
	send.Flags().BoolVar(&noWait, "no-wait", false, "return once the message is accepted")
	send.Flags().DurationVar(&timeout, "timeout", 0, "give up waiting after this long (0: never)")
	f.registerWorkspace(send)

	var limit int
	history := &cobra.Command{
		Use:   "history CONVERSATION [--limit N]",
		Short: "Print a conversation's turns, oldest first: each message and its answer",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ws, err := e.connect(cmd, g, f)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			res, err := c.History(ctx, ws, args[0], 0, limit)
			if err != nil {
				return apiError(err)
			}
			if f.json {
				return e.raw(res.Raw)
			}
			if res.Pagination.HasOlder {
				fmt.Fprintf(e.stdout, "(older turns: --json, before_position %d)\n", *res.Pagination.NextBeforePosition)
			}
			for _, t := range res.Turns {
				printTurn(e.stdout, &t)
			}
			return nil
		},
	}
	history.Flags().IntVar(&limit, "limit", 0, "the newest N turns (1..100; default 20)")
	f.registerWorkspace(history)

	cmd.AddCommand(create, send, history)
	return cmd
}

// turnText is a turn's message text.
func turnText(t *client.Turn) string {
	var in struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(t.Input, &in)
	return in.Text
}

// printTurn writes one turn: its position and status, the message and the answer or failure.
func printTurn(w io.Writer, t *client.Turn) {
	fmt.Fprintf(w, "turn %d (%s, %s)\n", t.Position, t.Status, t.Model)
	fmt.Fprintf(w, "  message: %s\n", indent(turnText(t)))
	switch {
	case t.Answer != nil:
		fmt.Fprintf(w, "  answer:  %s\n", indent(t.Answer.Text))
	case t.Failure != nil:
		d := t.Failure.Key
		if t.Failure.Detail != "" {
			d += ": " + t.Failure.Detail
		}
		fmt.Fprintf(w, "  failure: %s\n", indent(d))
	}
}

// indent continues a multi-line text under its label.
func indent(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n           ")
}

// readTurn reads the turn at a position, decoded and as served: the page of one turn below
// position+1.
func readTurn(ctx context.Context, c *client.Client, ws, conv string, position int64) (*client.Turn, json.RawMessage, error) {
	page, err := c.History(ctx, ws, conv, position+1, 1)
	if err != nil {
		return nil, nil, err
	}
	if len(page.Turns) != 1 || page.Turns[0].Position != position {
		return nil, nil, fmt.Errorf("conversation %s has no turn %d", conv, position)
	}
	var raw struct {
		Turns []json.RawMessage `json:"turns"`
	}
	if err := json.Unmarshal(page.Raw, &raw); err != nil || len(raw.Turns) != 1 {
		return nil, nil, fmt.Errorf("conversation %s: unreadable history page", conv)
	}
	return &page.Turns[0], raw.Turns[0], nil
}

// turnState is what one poll of a sent message learns: the turn (decoded and as served), and
// its run while the turn runs.
type turnState struct {
	turn *client.Turn
	raw  json.RawMessage
	run  *client.Run
}

// watchTurn waits for a turn to end, or for its run to wait for a person, and reports it.
func (e *env) watchTurn(ctx context.Context, c *client.Client, f *adminFlags, ws, conv string, turn client.Turn, timeout time.Duration) error {
	st, err := poll(ctx, timeout, func(ctx context.Context) (turnState, error) {
		t, raw, err := readTurn(ctx, c, ws, conv, turn.Position)
		if err != nil {
			return turnState{}, err
		}
		s := turnState{turn: t, raw: raw}
		if t.Status == "running" {
			r, err := c.Run(ctx, ws, t.RunPublicID)
			if err != nil {
				return s, err
			}
			s.run = &r.Run
		}
		return s, nil
	}, func(s turnState) bool {
		switch s.turn.Status {
		case turnCompleted, turnFailed, turnCanceled:
			return true
		}
		return s.run != nil && waitingForPerson(s.run)
	})
	if err != nil {
		if errors.Is(err, errWatchTimeout) {
			return err
		}
		return apiError(err)
	}
	if f.json {
		_, err := fmt.Fprintf(e.stdout, "%s\n", st.raw)
		return err
	}
	switch st.turn.Status {
	case turnCompleted:
		text := ""
		if st.turn.Answer != nil {
			text = st.turn.Answer.Text
		}
		_, err := fmt.Fprintln(e.stdout, strings.TrimRight(text, "\n"))
		return err
	case turnFailed:
		d := "-"
		if st.turn.Failure != nil {
			d = st.turn.Failure.Key
			if st.turn.Failure.Detail != "" {
				d += ": " + oneLine(st.turn.Failure.Detail)
			}
		}
		return fmt.Errorf("turn %d failed: %s (nexus run show %s)", st.turn.Position, d, st.turn.RunPublicID)
	case turnCanceled:
		return fmt.Errorf("turn %d was canceled", st.turn.Position)
	}
	return e.printWaiting(ctx, c, ws, st.run)
}
