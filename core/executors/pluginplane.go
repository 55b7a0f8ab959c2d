package executors

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/identity"
	kmemory "github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/uploads"
	"github.com/nexuskernel/nexus/plugins"
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/toolprovider"
)

// PluginPlane is the plugin host's executor plane (docs/development.md#the-plugin-host), the
// implementation of plugins.ExecutorPlane: every call goes through the Service, the push hub and
// the directory, the code HTTP executors reach, so a plugin's rows are claimed, committed and
// expired exactly like theirs. A plugin's result commits as the CommitRequest an HTTP runner's
// body decodes to, built from the plugin's typed values: nothing is written as JSON between the
// plugin and the store.
//
// A plugin's managed executor is one executor row per workspace it serves (an executor belongs to
// one workspace, docs/api.md#identity); the host knows the group by the public id of its first row
// (the home row), and every call fans out over the group's rows.
type PluginPlane struct {
	store   *store.Store
	svc     *Service
	hub     *Hub
	dir     *identity.Directory
	uploads *uploads.Service
	now     func() time.Time

	mu     sync.Mutex
	groups map[string]*managedGroup
}

// managedGroup is one plugin's executors.
type managedGroup struct {
	name string
	rows []*identity.Executor
	// runs remembers which row's workspace holds a run the inbox listed, so a claim does not
	// search the group.
	runs map[string]int
	// presence is the feed that holds the group online (presence is an open subscription,
	// docs/development.md#the-plugin-host): nobody reads it, so it hears no event (OpenPresence).
	presence *Feed
}

var _ plugins.ExecutorPlane = (*PluginPlane)(nil)

// NewPluginPlane returns the plugin host's executor plane over the service, the hub that feeds
// the host's claim loops and the directory that revokes a plugin's executors.
func NewPluginPlane(svc *Service, hub *Hub, dir *identity.Directory) *PluginPlane {
	return &PluginPlane{store: svc.store, svc: svc, hub: hub, dir: dir, uploads: svc.uploads, now: svc.now, groups: map[string]*managedGroup{}}
}

func managedExecutorOf(e *store.Executor) *identity.Executor {
	return &identity.Executor{ID: e.ID, PublicID: e.PublicID, Kind: e.Kind, Status: e.Status, DisplayName: e.DisplayName,
		WorkspaceID: e.WorkspaceID, WorkspacePublicID: e.WorkspacePublicID, CreatedAt: e.CreatedAt, ManagedBy: e.ManagedBy.String}
}

// catalogName is the plugin's catalog name from its registration.
func catalogName(m plugins.ManagedExecutor) string {
	if n := m.ManagedBy["plugin"]; n != "" {
		return n
	}
	return strings.TrimPrefix(m.RegistrationKey, "plugin:")
}

// servedWorkspaces resolves the catalog's workspaces (handles or public ids); none means all.
func servedWorkspaces(ctx context.Context, q store.Querier, refs []string) ([]store.Workspace, error) {
	if len(refs) == 0 {
		return store.AllWorkspaces(ctx, q)
	}
	var out []store.Workspace
	seen := map[int64]bool{}
	for _, ref := range refs {
		w, err := store.WorkspaceByHandle(ctx, q, ref)
		if errors.Is(err, store.ErrNotFound) {
			w, err = store.WorkspaceByPublicID(ctx, q, strings.ToLower(ref))
		}
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("workspace %q named in the plugin's workspaces does not exist", ref)
		}
		if err != nil {
			return nil, err
		}
		if !seen[w.ID] {
			seen[w.ID] = true
			out = append(out, *w)
		}
	}
	return out, nil
}

// EnsureManaged creates or reuses the plugin's executor in each workspace it serves, reactivates
// a revoked one under the same public id, and marks its rows in other workspaces not eligible.
func (p *PluginPlane) EnsureManaged(ctx context.Context, m plugins.ManagedExecutor) (string, error) {
	name := catalogName(m)
	var rows []*identity.Executor
	err := p.store.Write(ctx, func(tx *store.Tx) error {
		rows = nil
		wss, err := servedWorkspaces(ctx, tx, m.Workspaces)
		if err != nil {
			return err
		}
		if len(wss) == 0 {
			return errors.New("no workspace to serve")
		}
		served := map[int64]bool{}
		for _, w := range wss {
			served[w.ID] = true
			e, err := store.ManagedExecutor(ctx, tx, w.ID, name)
			switch {
			case errors.Is(err, store.ErrNotFound):
				e = &store.Executor{PublicID: store.NewPublicID(), WorkspaceID: w.ID, WorkspacePublicID: w.PublicID,
					Kind: RoleToolProvider, DisplayName: m.DisplayName, Status: store.ExecutorActive,
					CreatedAt: store.Millis(p.now())}
				if err := store.InsertManagedExecutor(ctx, tx, e, name); err != nil {
					return err
				}
			case err != nil:
				return err
			case e.Status != store.ExecutorActive:
				if err := store.ReactivateExecutor(ctx, tx, e.ID); err != nil {
					return err
				}
				e.Status = store.ExecutorActive
			}
			if err := store.SetManagedEligible(ctx, tx, e.ID, true); err != nil {
				return err
			}
			rows = append(rows, managedExecutorOf(e))
		}
		all, err := store.ManagedExecutorsOf(ctx, tx, name)
		if err != nil {
			return err
		}
		for _, e := range all {
			if !served[e.WorkspaceID] {
				if err := store.SetManagedEligible(ctx, tx, e.ID, false); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	home := rows[0].PublicID
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.groups[home]
	if g == nil {
		g = &managedGroup{name: name, runs: map[string]int{}}
		p.groups[home] = g
	}
	g.rows = rows
	return home, nil
}

func (p *PluginPlane) group(id string) (*managedGroup, []*identity.Executor, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.groups[id]
	if g == nil {
		return nil, nil, fmt.Errorf("plugins plane: no managed executor %s", id)
	}
	return g, g.rows, nil
}

// Announce replaces the announcement of every row of the group through the door's one write.
func (p *PluginPlane) Announce(ctx context.Context, id string, a announce.Announcement) error {
	_, rows, err := p.group(id)
	if err != nil {
		return err
	}
	for _, ex := range rows {
		if err := p.svc.PutAnnouncement(ctx, ex.ID, ex.WorkspaceID, a, p.now()); err != nil {
			return err
		}
	}
	return nil
}

// SetPresence holds the group online with a feed of its rows while online, and closes it when
// offline. The claim loop reads its own feed (Subscribe).
func (p *PluginPlane) SetPresence(ctx context.Context, id string, online bool) error {
	g, rows, err := p.group(id)
	if err != nil {
		return err
	}
	p.mu.Lock()
	old := g.presence
	g.presence = nil
	p.mu.Unlock()
	if old != nil {
		old.Close()
	}
	if !online {
		return nil
	}
	f, err := p.hub.OpenPresence(ctx, feedMembers(rows))
	if err != nil {
		return err
	}
	p.mu.Lock()
	g.presence = f
	p.mu.Unlock()
	return nil
}

func feedMembers(rows []*identity.Executor) []FeedMember {
	out := make([]FeedMember, len(rows))
	for i, ex := range rows {
		out[i] = FeedMember{ID: ex.ID, PublicID: ex.PublicID}
	}
	return out
}

// Revoke revokes every row of the group: their dispatched rows fail executor_revoked.
func (p *PluginPlane) Revoke(ctx context.Context, id string) error {
	_, rows, err := p.group(id)
	if err != nil {
		return err
	}
	for _, ex := range rows {
		if err := p.dir.RevokeManaged(ctx, ex.PublicID); err != nil {
			return err
		}
	}
	return nil
}

// Subscribe opens one feed of the group's rows for the claim loop.
func (p *PluginPlane) Subscribe(ctx context.Context, id string) (plugins.WorkFeed, error) {
	g, rows, err := p.group(id)
	if err != nil {
		return nil, err
	}
	f, err := p.hub.OpenFeed(ctx, feedMembers(rows))
	if err != nil {
		return nil, err
	}
	return workFeed{Feed: f, p: p, g: g, rows: rows}, nil
}

// workFeed is a hub feed in the host's terms.
type workFeed struct {
	*Feed
	p    *PluginPlane
	g    *managedGroup
	rows []*identity.Executor
}

func (f workFeed) Take() plugins.WorkNews {
	n := f.Feed.Take()
	out := plugins.WorkNews{Available: n.Available, Missed: n.Missed, CancelsLost: n.CancelsLost}
	for _, r := range n.Canceled {
		out.Canceled = append(out.Canceled, plugins.WorkRef{RunID: r.RunPublicID, TaskKey: r.TaskKey})
	}
	if len(n.Rows) == 0 {
		return out
	}
	f.p.mu.Lock()
	for _, r := range n.Rows {
		out.Rows = append(out.Rows, plugins.WorkRef{RunID: r.RunPublicID, TaskKey: r.TaskKey})
		// The member the event named holds the run, as the inbox's listing would say (rowsFor).
		for i, ex := range f.rows {
			if ex.PublicID == r.Executor {
				f.g.remember(r.RunPublicID, i)
				break
			}
		}
	}
	f.p.mu.Unlock()
	return out
}

// maxRememberedRuns bounds the runs a group remembers (managedGroup.runs): a claim of a run it
// forgot searches the group's rows, a few lookups, so the memory need not outgrow a busy minute.
const maxRememberedRuns = 4096

// remember records that the group's row i holds run; the caller holds the plane's lock.
func (g *managedGroup) remember(run string, i int) {
	if len(g.runs) >= maxRememberedRuns {
		clear(g.runs)
	}
	g.runs[run] = i
}

// inboxCursor pages each row's inbox on its own: one cursor per row, "-" once a row is done.
type inboxCursor []string

func decodeInboxCursor(s string, n int) inboxCursor {
	c := make(inboxCursor, n)
	if s == "" {
		return c
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return c
	}
	var got []string
	if json.Unmarshal(raw, &got) != nil || len(got) != n {
		return c
	}
	return got
}

const inboxDone = "-"

// Inbox pages the unclaimed and held rows of every row of the group.
func (p *PluginPlane) Inbox(ctx context.Context, id, after string, limit int) ([]plugins.InboxRow, string, error) {
	g, rows, err := p.group(id)
	if err != nil {
		return nil, "", err
	}
	if limit > MaxInboxPage {
		limit = MaxInboxPage
	}
	cur := decodeInboxCursor(after, len(rows))
	var out []plugins.InboxRow
	more := false
	for i, ex := range rows {
		if cur[i] == inboxDone {
			continue
		}
		// A member may revoke a managed executor by hand; its rows are settled executor_revoked
		// and it claims nothing more until its plugin loads again and reactivates it.
		if e, err := store.ExecutorByPublicID(ctx, p.store.Reader(), ex.PublicID); err != nil {
			return nil, "", err
		} else if e.Status != store.ExecutorActive {
			cur[i] = inboxDone
			continue
		}
		page, err := p.svc.Inbox(ctx, ex, cur[i], limit)
		if err != nil {
			return nil, "", err
		}
		now := p.now()
		p.mu.Lock()
		for _, t := range page.Tasks {
			out = append(out, plugins.InboxRow{RunID: t.RunPublicID, TaskKey: t.TaskKey, ToolName: t.ToolName, Waited: waited(t, now)})
			g.remember(t.RunPublicID, i)
		}
		p.mu.Unlock()
		if page.NextAfter != nil {
			cur[i] = *page.NextAfter
			more = true
		} else {
			cur[i] = inboxDone
		}
	}
	if !more {
		return out, "", nil
	}
	raw, _ := json.Marshal(cur)
	return out, base64.RawURLEncoding.EncodeToString(raw), nil
}

// waited is how long the row has been claimable: since it entered dispatched.
func waited(t *Row, now time.Time) time.Duration {
	if t.DispatchedAt == nil {
		return 0
	}
	at, err := time.Parse(time.RFC3339Nano, *t.DispatchedAt)
	if err != nil {
		return 0
	}
	return max(now.Sub(at), 0)
}

// rowsFor answers the group's row whose workspace holds the run: the one the inbox listed it
// under, else the first whose lookup finds it.
func (p *PluginPlane) rowsFor(id, runID string) ([]*identity.Executor, error) {
	g, rows, err := p.group(id)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	i, ok := g.runs[runID]
	p.mu.Unlock()
	if ok && i < len(rows) {
		return append([]*identity.Executor{rows[i]}, rows...), nil
	}
	return rows, nil
}

func refusalCode(err error) string {
	var r *refusal.Error
	if errors.As(err, &r) {
		return r.Code
	}
	return ""
}

// Claim claims one row through the executor door's claim. The claim records this instance, whose
// host holds it: when the instance dies, a survivor releases it by the expiry rule at once, and a
// replayable call is served again by the survivors' copies of the plugin
// (docs/operations.md#instance-liveness-and-takeover).
func (p *PluginPlane) Claim(ctx context.Context, id, runID, taskKey string) (plugins.Claim, error) {
	rows, err := p.rowsFor(id, runID)
	if err != nil {
		return plugins.Claim{}, err
	}
	instance := p.svc.engine.InstanceID()
	var last error
	for _, ex := range rows {
		ans, err := p.svc.claim(ctx, ex, runID, taskKey, instance)
		switch refusalCode(err) {
		case "":
		case CodeNotFound:
			last = err
			continue
		case CodeAlreadyClaimed, CodeTaskNotClaimable:
			return plugins.Claim{}, fmt.Errorf("%w: %v", plugins.ErrAlreadyClaimed, err)
		case CodeNotEligible, CodeNotAddressedHere, CodeNotClaimableKind, CodeNotAuthorized:
			return plugins.Claim{}, fmt.Errorf("%w: %v", plugins.ErrNotEligible, err)
		}
		if err != nil {
			return plugins.Claim{}, err
		}
		return claimOf(ans, p.now())
	}
	return plugins.Claim{}, fmt.Errorf("%w: %v", plugins.ErrNotEligible, last)
}

// claimOf converts the door's claim answer for the host.
func claimOf(ans *ClaimAnswer, now time.Time) (plugins.Claim, error) {
	t := ans.Task
	c := plugins.Claim{Token: ans.Claim.ClaimToken, RunID: t.RunPublicID, TaskKey: t.TaskKey, ToolName: t.ToolName,
		WorkspaceID: t.WorkspacePublicID, ToolInput: t.ToolInput, ClaimedAt: now, Generation: ans.Claim.Generation}
	if t.ToolCallID != nil {
		c.ToolCallID = *t.ToolCallID
	}
	if t.ToolAlias != nil {
		c.ToolAlias = *t.ToolAlias
	}
	if t.ConversationPublicID != nil {
		c.ConversationID = *t.ConversationPublicID
	}
	if len(t.EffectProfile) > 0 && !bytes.Equal(t.EffectProfile, []byte("null")) {
		var prof announce.EffectProfile
		if err := json.Unmarshal(t.EffectProfile, &prof); err != nil {
			return plugins.Claim{}, fmt.Errorf("plugins plane: the row's effect profile: %w", err)
		}
		c.EffectProfile = &prof
	}
	dl, err := time.Parse(time.RFC3339Nano, ans.Claim.DeadlineAt)
	if err != nil {
		return plugins.Claim{}, fmt.Errorf("plugins plane: the claim's deadline: %w", err)
	}
	c.DeadlineAt = dl
	if len(t.Scope) > 0 {
		scopes, err := kmemory.ParseProjection(t.Scope, t.WorkspacePublicID)
		if err != nil {
			return plugins.Claim{}, err
		}
		c.MemoryBindings = scopes
	}
	return c, nil
}

// rowOfWorkspace answers the group's row in the claim's workspace.
func (p *PluginPlane) rowOfWorkspace(id, workspaceID string) (*identity.Executor, error) {
	_, rows, err := p.group(id)
	if err != nil {
		return nil, err
	}
	for _, ex := range rows {
		if ex.WorkspacePublicID == workspaceID {
			return ex, nil
		}
	}
	return nil, fmt.Errorf("%w: no row of %s serves workspace %s", plugins.ErrClaimLost, id, workspaceID)
}

// StageCapture stages a file as the home row's capture. A commit links only its own row's
// captures, so a tool provider plugin serving several workspaces links captures in its home
// workspace only.
func (p *PluginPlane) StageCapture(ctx context.Context, id, filename string, data []byte) (string, error) {
	_, rows, err := p.group(id)
	if err != nil {
		return "", err
	}
	ex := rows[0]
	if p.uploads == nil {
		return "", errors.New("plugins plane: no upload store to stage a capture in")
	}
	u, err := p.uploads.Ingest(ctx, uploads.Creator{Kind: ex.Kind, ID: ex.ID, PublicID: ex.PublicID}, filename, bytes.NewReader(data))
	if err != nil {
		return "", err
	}
	return u.PublicID, nil
}

// Commit commits through the executor door's commit, with its validation and write-once rules:
// every refusal of the envelope's grammar (422, result_unstorable included) is a
// 422 refusal, handed over as it is, a claim no longer held plugins.ErrClaimLost
// (docs/development.md#the-plugin-host).
func (p *PluginPlane) Commit(ctx context.Context, id string, c plugins.Claim, body plugins.CommitBody) error {
	ex, err := p.rowOfWorkspace(id, c.WorkspaceID)
	if err != nil {
		return err
	}
	ans, err := p.svc.Commit(ctx, &CommitRequest{Executor: ex, RunID: c.RunID, TaskKey: c.TaskKey, ClaimToken: c.Token, Result: submissionOf(body)})
	if err != nil {
		var r *refusal.Error
		if errors.As(err, &r) {
			switch {
			case r.Code == CodeStaleClaim || r.Code == CodeTaskNotRunning:
				return fmt.Errorf("%w: %v", plugins.ErrClaimLost, err)
			case r.Kind == refusal.Unprocessable:
				return r
			}
		}
		return err
	}
	if !ans.Applied {
		return fmt.Errorf("%w: the row was already settled", plugins.ErrClaimLost)
	}
	return nil
}

// submissionOf is a plugin's result as the commit judges it: the very values an HTTP body with
// the same fields decodes to. A failed outcome without content carries its detail as the
// content's text, which is where the commit reads a failure's detail from
// (docs/api.md#the-executor-plane).
func submissionOf(b plugins.CommitBody) *envelope.Submission {
	s := &envelope.Submission{Outcome: envelope.Outcome(b.Outcome), IsError: b.IsError, Title: b.Title, StructuredContent: b.StructuredContent}
	if s.Outcome == "" {
		s.Outcome = envelope.OutcomeCompleted
	}
	if len(b.Metadata) > 0 {
		s.Metadata = b.Metadata
	}
	switch {
	case b.Blocks != nil:
		s.Blocks = make([]envelope.Block, len(b.Blocks))
		for i, bl := range b.Blocks {
			s.Blocks[i] = blockOf(bl)
		}
	case b.Text != "":
		text := b.Text
		s.Text = &text
	case b.FailureDetail != "":
		detail := b.FailureDetail
		s.Text = &detail
	}
	return s
}

// blockOf is a plugin's block as the envelope holds it; a link's "" and 0 are absent fields.
// A block that is neither text nor a link has no type, which the grammar refuses.
func blockOf(b toolprovider.Block) envelope.Block {
	switch {
	case b.Text != nil:
		return envelope.TextBlock(*b.Text)
	case b.Link != nil:
		l := b.Link
		out := envelope.Block{Type: envelope.TypeResourceLink, URI: l.URI, Name: l.Name,
			MimeType: optional(l.MimeType), Title: optional(l.Title), Description: optional(l.Description)}
		if l.Size > 0 {
			size := l.Size
			out.Size = &size
		}
		return out
	}
	return envelope.Block{}
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ClaimActive re-reads the claim through the executor door's claim read: a row gone, settled,
// past its deadline or claimed again is no longer held.
func (p *PluginPlane) ClaimActive(ctx context.Context, id string, c plugins.Claim) (bool, error) {
	ex, err := p.rowOfWorkspace(id, c.WorkspaceID)
	if errors.Is(err, plugins.ErrClaimLost) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	st, err := p.svc.ClaimRead(ctx, ex, c.RunID, c.TaskKey, c.Token)
	switch refusalCode(err) {
	case "":
	case CodeNotFound, CodeNotClaimant, CodeNotAddressedHere:
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return st.Claim.Active, nil
}

// ExpireNow applies the expiry rule to the claim at once, saying cause.
func (p *PluginPlane) ExpireNow(ctx context.Context, id string, c plugins.Claim, cause string) error {
	ex, err := p.rowOfWorkspace(id, c.WorkspaceID)
	if err != nil {
		return err
	}
	_, err = p.svc.ExpireClaim(ctx, ex, c.RunID, c.TaskKey, c.Token, cause)
	return err
}

// Stop closes the presence feeds of every group (shutdown).
func (p *PluginPlane) Stop() {
	p.mu.Lock()
	var all []*Feed
	for _, g := range p.groups {
		if g.presence != nil {
			all = append(all, g.presence)
		}
		g.presence = nil
	}
	p.mu.Unlock()
	for _, f := range all {
		f.Close()
	}
}
