package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nexuskernel/nexus/sdk/client"
	"github.com/nexuskernel/nexus/sdk/memory"
)

// conditionFlags name the document a change expects. Left out, the command reads the document
// first and expects what it read, so a change made by someone else in between is refused
// (stale_object) rather than overwritten.
type conditionFlags struct {
	publicID    string
	lockVersion int64
	create      bool
}

func (cf *conditionFlags) register(cmd *cobra.Command, withCreate bool) {
	cmd.Flags().StringVar(&cf.publicID, "expected-public-id", "", "the public id of the document you expect (with --expected-lock-version)")
	cmd.Flags().Int64Var(&cf.lockVersion, "expected-lock-version", 0, "the lock version you expect (with --expected-public-id)")
	if withCreate {
		cmd.Flags().BoolVar(&cf.create, "create", false, "create only: refuse (stale_object) if the path already holds a document")
	}
}

// expected answers the condition to send: the flags when given, else the document now at path
// (nil when there is none).
func (cf *conditionFlags) expected(ctx context.Context, cmd *cobra.Command, c *client.Client, ws, path string) (*client.MemoryVersion, error) {
	idSet, versionSet := cmd.Flags().Changed("expected-public-id"), cmd.Flags().Changed("expected-lock-version")
	switch {
	case cf.create && (idSet || versionSet):
		return nil, errors.New("--create and --expected-* exclude each other")
	case cf.create:
		return nil, nil
	case idSet != versionSet:
		return nil, errors.New("--expected-public-id and --expected-lock-version go together")
	case idSet:
		return &client.MemoryVersion{PublicID: cf.publicID, LockVersion: cf.lockVersion}, nil
	}
	cur, err := c.MemoryShow(ctx, ws, path)
	var ce *client.Error
	if errors.As(err, &ce) && ce.Status == 404 && ce.Code == memory.CodeNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, apiError(err)
	}
	return &client.MemoryVersion{PublicID: cur.Memory.PublicID, LockVersion: cur.Memory.LockVersion}, nil
}

func newMemory(e *env, g *globals) *cobra.Command {
	f := &adminFlags{}
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "Read and write the memory the agents read (workspace/ and your user/ root) and author skills",
		Long: `Memory holds documents at <root>/<name>: workspace/… is shared by the workspace's members
and runs, user/… belongs to you (an agent token's user/ is its steward's). These commands act where
the workspace's memory calls go: kernel memory, or the memory plugin its override names. Skills are
documents at workspace/skills/<name> or user/skills/<name> with a --description, kept in kernel
memory whatever the override; models read them, only members write them.

Changes are conditional: write, edit and rm read the document first and expect that version,
unless --expected-public-id and --expected-lock-version (or --create) say otherwise.`,
	}
	f.register(cmd)
	// connect opens the client and the workspace every subcommand acts in.
	connect := func(cmd *cobra.Command) (*client.Client, string, error) { return e.connect(cmd, g, f) }

	ls := &cobra.Command{
		Use:   "ls [PREFIX]",
		Short: "List documents: both roots, one root (workspace/) or a name prefix (user/proj)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ws, err := connect(cmd)
			if err != nil {
				return err
			}
			prefix := ""
			if len(args) == 1 {
				prefix = args[0]
			}
			res, err := c.MemoryList(cmd.Context(), ws, prefix)
			if err != nil {
				return apiError(err)
			}
			if f.json {
				return e.raw(res.Raw)
			}
			if len(res.Memory) == 0 {
				_, err := fmt.Fprintln(e.stdout, "No memory documents.")
				return err
			}
			rows := make([][]string, 0, len(res.Memory))
			for _, d := range res.Memory {
				desc := "-"
				if d.Description != nil {
					desc = *d.Description
				}
				rows = append(rows, []string{d.Path, strconv.FormatInt(d.Bytesize, 10), strconv.FormatInt(d.LockVersion, 10), when(d.WrittenAt), oneLine(desc)})
			}
			return table(e.stdout, "PATH\tBYTES\tVERSION\tWRITTEN\tDESCRIPTION", rows)
		},
	}

	show := &cobra.Command{
		Use:   "show PATH",
		Short: "Print a document's content (--json: with its public id, version and description)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ws, err := connect(cmd)
			if err != nil {
				return err
			}
			res, err := c.MemoryShow(cmd.Context(), ws, args[0])
			if err != nil {
				return apiError(err)
			}
			if f.json {
				return e.raw(res.Raw)
			}
			if res.Memory.Content != nil {
				_, err = io.WriteString(e.stdout, *res.Memory.Content)
			}
			return err
		},
	}

	var writeCond conditionFlags
	var file, content, description string
	write := &cobra.Command{
		Use:   "write PATH (--file FILE | --content TEXT) [--description TEXT]",
		Short: "Create a document or replace its whole content; a skill needs --description",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fileSet, contentSet := cmd.Flags().Changed("file"), cmd.Flags().Changed("content")
			if fileSet == contentSet {
				return errors.New("pass exactly one of --file (- for standard input) and --content")
			}
			text := content
			if fileSet {
				b, err := e.readInput(file)
				if err != nil {
					return err
				}
				text = string(b)
			}
			c, ws, err := connect(cmd)
			if err != nil {
				return err
			}
			expect, err := writeCond.expected(cmd.Context(), cmd, c, ws, args[0])
			if err != nil {
				return err
			}
			req := &client.MemoryWriteRequest{Path: args[0], Content: text, Expected: expect}
			if cmd.Flags().Changed("description") {
				req.Description = &description
			}
			res, err := c.MemoryWrite(cmd.Context(), ws, req)
			if err != nil {
				return apiError(err)
			}
			if f.json {
				return e.raw(res.Raw)
			}
			verb := "replaced"
			if res.Created {
				verb = "created"
			}
			return e.printChange(verb, &res.Memory)
		},
	}
	write.Flags().StringVarP(&file, "file", "f", "", "read the content from FILE (- for standard input)")
	write.Flags().StringVar(&content, "content", "", "the content itself")
	write.Flags().StringVar(&description, "description", "", "a skill's description, the line agents read (skills only)")
	writeCond.register(write, true)

	var editCond conditionFlags
	var oldText, newText string
	edit := &cobra.Command{
		Use:   "edit PATH --old TEXT --new TEXT",
		Short: "Replace the one occurrence of --old with --new",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("old") || !cmd.Flags().Changed("new") {
				return errors.New("pass --old and --new")
			}
			c, ws, err := connect(cmd)
			if err != nil {
				return err
			}
			expect, err := editCond.expected(cmd.Context(), cmd, c, ws, args[0])
			if err != nil {
				return err
			}
			if expect == nil {
				return fmt.Errorf("no memory document %s", args[0])
			}
			res, err := c.MemoryEdit(cmd.Context(), ws, &client.MemoryEditRequest{Path: args[0], OldText: oldText, NewText: newText, Expected: *expect})
			if err != nil {
				return apiError(err)
			}
			if f.json {
				return e.raw(res.Raw)
			}
			return e.printChange("edited", &res.Memory)
		},
	}
	edit.Flags().StringVar(&oldText, "old", "", "the passage to replace, literally; it must occur exactly once")
	edit.Flags().StringVar(&newText, "new", "", "what replaces it (may be empty)")
	editCond.register(edit, false)

	var ignoreCase bool
	var limit int
	grep := &cobra.Command{
		Use:   "grep PATTERN [PREFIX] [-i] [--limit N]",
		Short: "Search documents line by line with an RE2 pattern",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ws, err := connect(cmd)
			if err != nil {
				return err
			}
			req := &client.MemoryGrepRequest{Pattern: args[0], IgnoreCase: ignoreCase, Limit: limit}
			if len(args) == 2 {
				req.Prefix = args[1]
			}
			res, err := c.MemoryGrep(cmd.Context(), ws, req)
			if err != nil {
				return apiError(err)
			}
			if f.json {
				return e.raw(res.Raw)
			}
			if len(res.Matches) == 0 {
				_, err := fmt.Fprintln(e.stdout, "No matches found.")
				return err
			}
			for _, m := range res.Matches {
				if _, err := fmt.Fprintf(e.stdout, "%s:%d: %s\n", m.Path, m.LineNumber, m.Text); err != nil {
					return err
				}
			}
			if res.Truncated {
				_, err = fmt.Fprintln(e.stdout, "[Result limit reached. Narrow the pattern or raise --limit.]")
			}
			return err
		},
	}
	grep.Flags().BoolVarP(&ignoreCase, "ignore-case", "i", false, "match without regard to case")
	grep.Flags().IntVar(&limit, "limit", 0, "at most this many matches, 1 to 500 (default 100)")

	var rmCond conditionFlags
	rm := &cobra.Command{
		Use:   "rm PATH",
		Short: "Delete a document",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ws, err := connect(cmd)
			if err != nil {
				return err
			}
			expect, err := rmCond.expected(cmd.Context(), cmd, c, ws, args[0])
			if err != nil {
				return err
			}
			if expect == nil {
				return fmt.Errorf("no memory document %s", args[0])
			}
			if err := c.MemoryDelete(cmd.Context(), ws, &client.MemoryDeleteRequest{Path: args[0], Expected: *expect}); err != nil {
				return apiError(err)
			}
			if f.json {
				return nil // 204: the API answers no body
			}
			_, err = fmt.Fprintf(e.stdout, "deleted %s\n", args[0])
			return err
		},
	}
	rmCond.register(rm, false)

	override := newMemoryOverride(e, f, connect)
	for _, sub := range []*cobra.Command{ls, show, write, edit, grep, rm} {
		f.registerWorkspace(sub)
	}
	cmd.AddCommand(ls, show, write, edit, grep, rm, override)
	return cmd
}

// printChange reports a written or edited document on one line.
func (e *env) printChange(verb string, d *client.MemoryDocument) error {
	_, err := fmt.Fprintf(e.stdout, "%s %s: %d bytes, version %d, public id %s\n", verb, d.Path, d.Bytesize, d.LockVersion, d.PublicID)
	return err
}

// readInput reads a file, or standard input for "-".
func (e *env) readInput(path string) ([]byte, error) {
	if path == "-" {
		in := e.stdin
		if in == nil {
			in = os.Stdin
		}
		return io.ReadAll(in)
	}
	return os.ReadFile(path)
}

// oneLine folds a description onto one table row.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
