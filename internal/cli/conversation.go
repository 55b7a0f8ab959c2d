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
	cmd := &cobra.Command{Use: "conversation", Short: "Create, list and archive conversations, send them messages and read their history"}
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
			people, err := memberHandles(ctx, c, ws)
			if err != nil {
				return err
			}
			cv := res.Conversation
			return fields(e.stdout, "conversation", cv.PublicID, "workspace", ws, "answered by", people.of(cv.AnsweringAgentPublicID), "status", cv.Status)
		},
	}
	create.Flags().StringVar(&agent, "agent", "", "the answering agent, handle or public id (required for a user)")
	create.Flags().StringVar(&title, "title", "", "the conversation's title")
	create.Flags().StringVar(&runner, "runner", "", "the conversation's default runner, public id or display name")
	f.registerWorkspace(create)
	f.registerQuiet(create, "the conversation's public id")

	var model, file, idem string
	var attach []string
	var noWait, follow bool
	var timeout time.Duration
	send := &cobra.Command{
		Use:   "send CONVERSATION (TEXT | --file FILE) [--attach FILE] [--model REF] [--no-wait]",
		Short: "Post a message and print the answer to it",
		Long: `Post a message into a conversation. Its turn queues behind the turns before it; the command
waits for the turn and prints its answer (or, when the answer waits for a person, the asks and
approvals to decide, as "nexus run watch" does), with run watch's exit codes: 0 answered, 3 waits
for a person, 4 failed (its run needs attention), 5 canceled, 6 --timeout passed. --attach FILE
uploads a file and attaches it to the message (repeatable; the text may then be empty).
--no-wait prints the turn and returns at once. --follow prints the answer as it streams, with
"[call NAME]" as each tool call begins and "[NAME completed]" (or its failure) as it settles.`,
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
			case len(attach) == 0:
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
			if len(attach) > 0 {
				ids, err := e.attachAll(ctx, c, attach)
				if err != nil {
					return err
				}
				msg["attachments"] = ids
			}
			var fl *follower
			if follow && !noWait && !f.json {
				// Opened before the post, so that the turn's first events are not missed.
				if fl, err = e.openFollow(ctx, c, ws, client.MemberEventOptions{ConversationPublicID: args[0]}); err != nil {
					return err
				}
			}
			res, err := c.PostMessage(ctx, ws, args[0], msg, idem)
			if err != nil {
				if fl != nil {
					fl.stop("")
				}
				return apiError(err)
			}
			if noWait {
				if f.json {
					return e.raw(res.Raw)
				}
				return fields(e.stdout, "turn", res.Turn.PublicID, "position", fmt.Sprint(res.Turn.Position),
					"status", res.Turn.Status, "run", res.Turn.RunPublicID)
			}
			return e.watchTurn(ctx, c, f, ws, args[0], res.Turn, timeout, fl)
		},
	}
	send.Flags().StringVar(&file, "file", "", "read the message from FILE (- for standard input)")
	send.Flags().StringVar(&model, "model", "", "provider/model for this turn (default: the agent's, else the deployment's)")
	send.Flags().StringArrayVar(&attach, "attach", nil, "upload FILE and attach it to the message (repeatable)")
	send.Flags().StringVar(&idem, "idempotency-key", "", "a key that makes a retried send answer the first turn")
	send.Flags().BoolVar(&noWait, "no-wait", false, "return once the message is accepted")
	send.Flags().BoolVar(&follow, "follow", false, "print the answer as it streams and each tool call as it starts and settles")
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

	var listStatus string
	var listLimit int
	list := &cobra.Command{
		Use:   "list [--status active|archived] [--limit N]",
		Short: "List a workspace's conversations, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ws, err := e.connect(cmd, g, f)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			res, err := c.Conversations(ctx, ws, listStatus, "", listLimit)
			if err != nil {
				return apiError(err)
			}
			if f.json {
				return e.raw(res.Raw)
			}
			people, err := memberHandles(ctx, c, ws)
			if err != nil {
				return err
			}
			rows := make([][]string, 0, len(res.Conversations))
			for _, cv := range res.Conversations {
				title := "-"
				if cv.Title != nil {
					title = oneLine(*cv.Title)
				}
				live := "-"
				if cv.LiveTurnPublicID != nil {
					live = "running"
				}
				rows = append(rows, []string{cv.PublicID, title, people.of(cv.AnsweringAgentPublicID), cv.Status, live, fmt.Sprint(cv.QueuedTurns), whenText(cv.CreatedAt)})
			}
			if err := table(e.stdout, "CONVERSATION\tTITLE\tAGENT\tSTATUS\tTURN\tQUEUED\tCREATED", rows); err != nil {
				return err
			}
			if res.Pagination.NextAfter != nil {
				_, err = fmt.Fprintln(e.stdout, "(older conversations: --json, after", *res.Pagination.NextAfter+")")
			}
			return err
		},
	}
	list.Flags().StringVar(&listStatus, "status", "", "only active or archived conversations")
	list.Flags().IntVar(&listLimit, "limit", 0, "at most this many (1..100; default 20)")
	f.registerWorkspace(list)

	archive := &cobra.Command{
		Use:   "archive CONVERSATION",
		Short: "Archive a conversation: it takes no more messages (its creator, its agent, the agent's steward or an owner)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ws, err := e.connect(cmd, g, f)
			if err != nil {
				return err
			}
			res, err := c.ArchiveConversation(cmd.Context(), ws, args[0])
			if err != nil {
				return apiError(err)
			}
			if f.json {
				return e.raw(res.Raw)
			}
			cv := res.Conversation
			return fields(e.stdout, "conversation", cv.PublicID, "workspace", ws, "status", cv.Status, "archived", optString(cv.ArchivedAt))
		},
	}
	f.registerWorkspace(archive)

	cmd.AddCommand(create, send, history, list, archive)
	return cmd
}

// optString is *s, or "-".
func optString(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
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
func (e *env) watchTurn(ctx context.Context, c *client.Client, f *adminFlags, ws, conv string, turn client.Turn, timeout time.Duration, fl *follower) error {
	if fl != nil {
		fl.start(turn.RunPublicID)
	}
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
	streamed := false
	if fl != nil {
		key := ""
		if err == nil && st.turn.Answer != nil {
			key = st.turn.Answer.TaskKey
		}
		streamed = fl.stop(key)
	}
	if err != nil {
		if errors.Is(err, errWatchTimeout) {
			return &exitError{code: exitTimeout, err: fmt.Errorf("turn %d did not settle within --timeout %s; it goes on (nexus conversation history %s)",
				turn.Position, timeout, conv)}
		}
		return apiError(err)
	}
	if streamed && st.turn.Status == turnCompleted {
		return nil
	}
	outcome := turnOutcome(st.turn)
	if f.json {
		if _, err := fmt.Fprintf(e.stdout, "%s\n", st.raw); err != nil {
			return err
		}
		return outcome
	}
	switch st.turn.Status {
	case turnCompleted:
		text := ""
		if st.turn.Answer != nil {
			text = st.turn.Answer.Text
		}
		_, err := fmt.Fprintln(e.stdout, strings.TrimRight(text, "\n"))
		return err
	case turnFailed, turnCanceled:
		return outcome
	}
	if err := e.printWaiting(ctx, c, ws, st.run); err != nil {
		return err
	}
	return outcome
}

// turnOutcome is how a settled turn ends the command, with the run watch's exit codes: a failed
// turn is its run needing attention.
func turnOutcome(t *client.Turn) error {
	switch t.Status {
	case turnCompleted:
		return nil
	case turnFailed:
		d := "-"
		if t.Failure != nil {
			d = t.Failure.Key
			if t.Failure.Detail != "" {
				d += ": " + oneLine(t.Failure.Detail)
			}
		}
		return &exitError{code: exitNeedsAttention, err: fmt.Errorf("turn %d failed: %s (nexus run show %s)", t.Position, d, t.RunPublicID)}
	case turnCanceled:
		return &exitError{code: exitCanceled, err: fmt.Errorf("turn %d was canceled", t.Position)}
	}
	return &exitError{code: exitWaiting}
}
