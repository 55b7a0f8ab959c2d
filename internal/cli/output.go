package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/sdk/client"
)

// EnvWorkspace names the workspace the administration commands act on when --workspace is not
// given.
const EnvWorkspace = "NEXUS_WORKSPACE"

// adminFlags are the flags of the commands that administer a workspace through the API.
type adminFlags struct {
	clientFlags
	workspace string
	quiet     bool
}

// registerWorkspace adds --workspace to a command.
func (f *adminFlags) registerWorkspace(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.workspace, "workspace", "w", "", "workspace public id or handle (env "+EnvWorkspace+"; default: your only workspace)")
}

// registerQuiet adds --quiet to a command that mints a token.
func (f *adminFlags) registerQuiet(cmd *cobra.Command, what string) {
	cmd.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "print only "+what+", for scripts")
}

// workspaceRef is --workspace, else NEXUS_WORKSPACE, else "" (let the caller decide).
func (e *env) workspaceRef(cmd *cobra.Command, f *adminFlags) string {
	if cmd.Flags().Changed("workspace") {
		return f.workspace
	}
	return e.getenv(EnvWorkspace)
}

// resolveWorkspace is the workspace a command acts on, by handle: the flag or the environment,
// else the caller's only workspace.
func (e *env) resolveWorkspace(ctx context.Context, cmd *cobra.Command, c *client.Client, f *adminFlags) (string, error) {
	if ref := e.workspaceRef(cmd, f); ref != "" {
		return workspaceHandle(ctx, c, ref)
	}
	ws, err := c.Workspaces(ctx)
	if err != nil {
		return "", apiError(err)
	}
	switch len(ws.Workspaces) {
	case 1:
		return ws.Workspaces[0].Handle, nil
	case 0:
		return "", errors.New("you are not a member of any workspace")
	}
	handles := make([]string, len(ws.Workspaces))
	for i, w := range ws.Workspaces {
		handles[i] = w.Handle
	}
	return "", fmt.Errorf("you are a member of several workspaces (%s): pass --workspace or set %s", strings.Join(handles, ", "), EnvWorkspace)
}

// workspaceHandle names a workspace reference by its handle, as every output names workspaces:
// a public id is looked up among the caller's workspaces, and left as it is when none holds it
// (the API then answers not_found).
func workspaceHandle(ctx context.Context, c *client.Client, ref string) (string, error) {
	if !identity.IsUUID(ref) {
		return ref, nil
	}
	ws, err := c.Workspaces(ctx)
	if err != nil {
		return "", apiError(err)
	}
	for _, w := range ws.Workspaces {
		if strings.EqualFold(w.PublicID, ref) {
			return w.Handle, nil
		}
	}
	return ref, nil
}

// workspaceHandles maps the public ids of the caller's workspaces to their handles.
func workspaceHandles(ctx context.Context, c *client.Client) (names, error) {
	ws, err := c.Workspaces(ctx)
	if err != nil {
		return nil, apiError(err)
	}
	n := names{}
	for _, w := range ws.Workspaces {
		n[w.PublicID] = w.Handle
	}
	return n, nil
}

// memberHandles maps the public ids of ws's members, users and agents, to their handles.
func memberHandles(ctx context.Context, c *client.Client, ws string) (names, error) {
	ms, err := c.Members(ctx, ws)
	if err != nil {
		return nil, apiError(err)
	}
	n := names{}
	for _, m := range ms.Members {
		n[m.PublicID] = m.Handle
	}
	return n, nil
}

// names maps public ids to handles.
type names map[string]string

// of is id's handle, or id itself when the map does not hold it (a member removed since).
func (n names) of(id string) string {
	if h, ok := n[id]; ok {
		return h
	}
	return id
}

// connect opens the client and the workspace a command acts in.
func (e *env) connect(cmd *cobra.Command, g *globals, f *adminFlags) (*client.Client, string, error) {
	c, err := e.client(cmd, g, &f.clientFlags)
	if err != nil {
		return nil, "", err
	}
	ws, err := e.resolveWorkspace(cmd.Context(), cmd, c, f)
	return c, ws, err
}

// connectRun opens the client and reads the run a command acts on, with the workspace that holds
// it.
func (e *env) connectRun(cmd *cobra.Command, g *globals, f *adminFlags, run string) (*client.Client, string, *client.RunResponse, error) {
	c, err := e.client(cmd, g, &f.clientFlags)
	if err != nil {
		return nil, "", nil, err
	}
	ws, res, err := e.findRun(cmd.Context(), cmd, c, f, run)
	return c, ws, res, err
}

// resolveMember finds a member of ws by public id or handle: users first, as the API lists them.
func resolveMember(ctx context.Context, c *client.Client, ws, ref, kind string) (string, error) {
	if identity.IsUUID(ref) {
		return ref, nil
	}
	ms, err := c.Members(ctx, ws)
	if err != nil {
		return "", apiError(err)
	}
	var found []client.Member
	for _, m := range ms.Members {
		if m.Handle == ref && (kind == "" || m.Kind == kind) {
			found = append(found, m)
		}
	}
	switch len(found) {
	case 1:
		return found[0].PublicID, nil
	case 0:
		return "", fmt.Errorf("no member %q in workspace %s", ref, ws)
	}
	return "", fmt.Errorf("both a user and an agent are called %q in workspace %s: pass a public id", ref, ws)
}

// resolveUser finds a user by public id, or by handle among the members of the caller's
// workspaces: user handles are global, but the API reads users only through workspaces.
func resolveUser(ctx context.Context, c *client.Client, ref string) (string, error) {
	if identity.IsUUID(ref) {
		return ref, nil
	}
	ws, err := c.Workspaces(ctx)
	if err != nil {
		return "", apiError(err)
	}
	for _, w := range ws.Workspaces {
		ms, err := c.Members(ctx, w.PublicID)
		if err != nil {
			return "", apiError(err)
		}
		for _, m := range ms.Members {
			if m.Kind == "user" && m.Handle == ref {
				return m.PublicID, nil
			}
		}
	}
	return "", fmt.Errorf("no user %q in any of your workspaces: pass the user's public id", ref)
}

// table writes aligned columns.
func table(w io.Writer, header string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// fields writes a name/value block, one pair per line.
func fields(w io.Writer, pairs ...string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for i := 0; i+1 < len(pairs); i += 2 {
		fmt.Fprintf(tw, "%s\t%s\n", pairs[i], pairs[i+1])
	}
	return tw.Flush()
}

// shownOnce is printed after a new token.
const shownOnce = "(shown once: store it now)"

// when renders a time for a table.
func when(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

// whenText renders an API timestamp for a table as when does; a text it cannot read is shown
// as it is.
func whenText(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return when(t)
}

// whenOpt renders an optional time; nil is "-".
func whenOpt(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return when(*t)
}

// raw prints an API body as served.
func (e *env) raw(body []byte) error {
	_, err := e.stdout.Write(body)
	return err
}
