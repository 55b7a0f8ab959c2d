package profiles

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/announce"
)

// PutAnnouncement replaces an executor's announcement with a, which must be an announcement
// sdk/announce accepted (ParseAnnouncement for the HTTP door, ValidatePlugin for the host). It
// is checked again here, so that nothing unvalidated is ever stored: a refused one is returned
// as sdk/announce's *refusal.Refusal and the previous announcement stays. The stored form is a's
// normalized form (announce.Announcement.Normalize), encoded without HTML escaping.
func PutAnnouncement(ctx context.Context, q store.Querier, executorID int64, a announce.Announcement, at time.Time) error {
	if r := announce.Validate(a); r != nil {
		return r
	}
	n := a.Normalize()
	tools, err := encode(n.Tools)
	if err != nil {
		return err
	}
	docs, err := encode(n.Documents)
	if err != nil {
		return err
	}
	return store.PutAnnouncement(ctx, q, &store.Announcement{
		ExecutorID:  executorID,
		Tools:       string(tools),
		Environment: string(n.Environment),
		Documents:   string(docs),
		AnnouncedAt: store.Millis(at),
	})
}

// Announced is an executor's stored announcement.
type Announced struct {
	Announcement announce.Announcement
	// AnnouncedAt is Unix ms of the replacement.
	AnnouncedAt int64
}

// AnnouncementOf reads an executor's current announcement; store.ErrNotFound when it never
// announced.
func AnnouncementOf(ctx context.Context, q store.Querier, executorID int64) (*Announced, error) {
	row, err := store.AnnouncementOf(ctx, q, executorID)
	if err != nil {
		return nil, err
	}
	a, err := decodeAnnouncement(row.Tools, row.Environment, row.Documents)
	if err != nil {
		return nil, fmt.Errorf("profiles: announcement of executor %d: %w", executorID, err)
	}
	return &Announced{Announcement: a, AnnouncedAt: row.AnnouncedAt}, nil
}

// Runners reads what acceptance needs of the Runners named by publicIDs in one workspace: for each
// executor of that workspace among them, its display name, its current announcement (empty when it
// never announced) and whether it is eligible: an active executor of kind runner
// (docs/agent-tools.md#declaring-tools; connection presence is never a condition). Ids are compared
// case-insensitively; repeats, ids that are not UUIDs, unknown ids and ids of other workspaces
// yield nothing, which acceptance reads as unknown, hence not eligible. The result follows the
// first occurrence of each id in publicIDs.
func Runners(ctx context.Context, q store.Querier, workspaceID int64, publicIDs []string) ([]declare.Runner, error) {
	seen := make(map[string]bool, len(publicIDs))
	ids := make([]string, 0, len(publicIDs))
	for _, id := range publicIDs {
		id = strings.ToLower(id)
		if !declare.ValidRunnerID(id) || seen[id] {
			continue
		}
		seen[id] = true
		ids = append(ids, id)
	}
	found := make(map[string]declare.Runner, len(ids))
	for start := 0; start < len(ids); start += runnerLookupBatch {
		rows, err := store.AnnouncedExecutorsOf(ctx, q, workspaceID, ids[start:min(start+runnerLookupBatch, len(ids))])
		if err != nil {
			return nil, err
		}
		for i := range rows {
			r, err := runnerOf(&rows[i])
			if err != nil {
				return nil, err
			}
			found[r.PublicID] = r
		}
	}
	out := make([]declare.Runner, 0, len(found))
	for _, id := range ids {
		if r, ok := found[id]; ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// Providers reads the workspace's pool for acceptance (docs/agent-tools.md#imports): its active
// tool providers that announced, each with its current announcement, in public id order.
func Providers(ctx context.Context, q store.Querier, workspaceID int64) ([]declare.Provider, error) {
	rows, err := store.AnnouncedToolProviders(ctx, q, workspaceID)
	if err != nil {
		return nil, err
	}
	out := make([]declare.Provider, 0, len(rows))
	for i := range rows {
		a, err := decodeAnnouncement(rows[i].Tools.String, rows[i].Environment.String, rows[i].Documents.String)
		if err != nil {
			return nil, fmt.Errorf("profiles: announcement of executor %s: %w", rows[i].PublicID, err)
		}
		out = append(out, declare.Provider{PublicID: strings.ToLower(rows[i].PublicID), DisplayName: rows[i].DisplayName, Announcement: a})
	}
	return out, nil
}

func runnerOf(row *store.AnnouncedExecutor) (declare.Runner, error) {
	r := declare.Runner{
		PublicID:    strings.ToLower(row.PublicID),
		DisplayName: row.DisplayName,
		Eligible:    row.Kind == store.ExecutorRunner && row.Status == store.ExecutorActive,
	}
	if !row.AnnouncedAt.Valid {
		return r, nil
	}
	a, err := decodeAnnouncement(row.Tools.String, row.Environment.String, row.Documents.String)
	if err != nil {
		return r, fmt.Errorf("profiles: announcement of executor %s: %w", row.PublicID, err)
	}
	r.Announcement = a
	return r, nil
}

func decodeAnnouncement(tools, environment, documents string) (announce.Announcement, error) {
	var a announce.Announcement
	if err := json.Unmarshal([]byte(tools), &a.Tools); err != nil {
		return a, fmt.Errorf("tools: %w", err)
	}
	if err := json.Unmarshal([]byte(documents), &a.Documents); err != nil {
		return a, fmt.Errorf("documents: %w", err)
	}
	a.Environment = json.RawMessage(environment)
	return a, nil
}

// encode writes v compactly without HTML escaping, as every stored JSON text is written.
func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
