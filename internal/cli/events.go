package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nexuskernel/nexus/sdk/client"
)

func newEvents(e *env, g *globals) *cobra.Command {
	f := &adminFlags{}
	var run, conversation, since string
	var count int
	cmd := &cobra.Command{
		Use:   "events [--run RUN] [--conversation CONV] [--since-id ID] [--count N]",
		Short: "Tail a workspace's events as they happen (GET /agent_api/v1/workspaces/{ws}/events)",
		Long: `Tail a workspace's member events (docs/api.md#events): one line per event, "ID KIND" and
the event's fields, or with --json the event's JSON data, one object per line with its "id" and
"event" added. --run and --conversation keep one run's or conversation's events. --since-id
resumes after an event id a previous tail printed; when the server cannot resume there (another
instance gave the id, or it left the window) it prints a resync event first: re-read what you
follow. A dropped connection is resumed the same way. --count stops after N events.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ws, err := e.connect(cmd, g, f)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			s, err := c.MemberEvents(ctx, ws, client.MemberEventOptions{RunPublicID: run, ConversationPublicID: conversation, LastEventID: since})
			if err != nil {
				return apiError(err)
			}
			defer s.Close()
			for n := 0; count <= 0 || n < count; n++ {
				ev, err := s.Next()
				if err != nil {
					if errors.Is(err, context.Canceled) {
						return nil
					}
					return apiError(err)
				}
				if err := e.printEvent(ev, f.json); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&run, "run", "", "only this run's events")
	cmd.Flags().StringVar(&conversation, "conversation", "", "only this conversation's events")
	cmd.Flags().StringVar(&since, "since-id", "", "resume after this event id")
	cmd.Flags().IntVar(&count, "count", 0, "stop after this many events (0: until interrupted)")
	f.register(cmd)
	f.registerWorkspace(cmd)
	return cmd
}

// printEvent writes one event: its JSON with id and event added, or a line of its fields.
func (e *env) printEvent(ev *client.MemberEvent, asJSON bool) error {
	if asJSON {
		data := strings.TrimSpace(string(ev.Data))
		head := fmt.Sprintf(`{"id":%q,"event":%q`, ev.ID, ev.Type)
		if data != "{}" && strings.HasPrefix(data, "{") {
			head += "," + data[1:]
		} else {
			head += "}"
		}
		_, err := fmt.Fprintln(e.stdout, head)
		return err
	}
	parts := []string{ev.ID, ev.Type}
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("run", ev.RunPublicID)
	add("conversation", ev.ConversationPublicID)
	add("task", ev.TaskKey)
	add("tool", ev.ToolName)
	add("status", ev.Status)
	add("error", ev.ErrorKey)
	add("finish", ev.Finish)
	add("executor", ev.ExecutorPublicID)
	add("decision", ev.Decision)
	add("by", ev.By)
	add("turn", ev.TurnPublicID)
	add("reason", ev.Reason)
	add("plugin", ev.Name)
	add("state", ev.State)
	add("instance", ev.Instance)
	add("call", ev.ToolCall)
	if ev.Text != "" {
		add("text", strconv.Quote(ev.Text))
	}
	_, err := fmt.Fprintln(e.stdout, strings.Join(parts, " "))
	return err
}
