package runs

import (
	"context"
	"fmt"
	"mime"
	"strings"
	"time"

	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/uploads"
)

// Attachment is an input upload as a turn or a model step keeps it: the upload descriptor's
// lasting facts (docs/api.md#uploads), as rows store it.
type Attachment = store.Attachment

// inputAttachments checks that every id is one of the caller's own complete uploads (422
// unknown_input_upload at path[i] otherwise) and answers their descriptors in order. The
// uploads are locked until the transaction ends, so the caller binds them in it.
func (e *Engine) inputAttachments(ctx context.Context, tx *store.Tx, a *Actor, ids []string, path string) ([]Attachment, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if e.uploads == nil {
		return nil, refusal.Newf(refusal.Unprocessable, CodeUnknownInputUpload, "%s[0]: no upload %s of yours exists.", path, ids[0]).
			With("path", path+"[0]")
	}
	p := &identity.Principal{Kind: a.Kind, ID: a.ID, PublicID: a.PublicID}
	if err := uploads.CheckInputs(ctx, tx, p, ids, path); err != nil {
		return nil, err
	}
	found, err := e.uploads.Lookup(ctx, tx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]Attachment, 0, len(ids))
	for _, id := range ids {
		u, ok := found[strings.ToLower(id)]
		if !ok {
			return nil, fmt.Errorf("runs: upload %s vanished after its check", id)
		}
		out = append(out, Attachment{PublicID: u.PublicID, URI: u.URI(), Filename: u.Filename, ContentType: u.ContentType,
			ByteSize: u.ByteSize, SHA256: u.SHA256})
	}
	return out, nil
}

// bindInputs keeps a row's input uploads alive as long as the row.
func (e *Engine) bindInputs(ctx context.Context, tx *store.Tx, kind string, id, workspaceID int64, atts []Attachment, now int64) error {
	if len(atts) == 0 {
		return nil
	}
	ids := make([]string, len(atts))
	for i, a := range atts {
		ids[i] = a.PublicID
	}
	return uploads.Bind(ctx, tx, uploads.Target{Kind: kind, ID: id, WorkspaceID: workspaceID}, ids, time.UnixMilli(now))
}

// mediaType is a detected type without parameters, lowercased
// (docs/agent-tools.md#what-a-model-reads).
func mediaType(contentType string) string {
	t, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return strings.ToLower(strings.TrimSpace(strings.SplitN(contentType, ";", 2)[0]))
	}
	return t
}

// The endings of an attachment index line that say why the upload is not an attachment part
// (docs/providers.md, media limits).
const (
	endUnreadable = ": not readable by this model"
	endTooLarge   = ": too large for this model"
	endRefused    = ": refused by this model"
	endOverLimit  = ": over this request's attachment limit"
)

// mediaGate decides, in request order, whether each media upload of a request becomes an
// attachment part: the model must accept its kind, its size and an image's edges must fit the
// model's limits, the provider must not have refused it for this model before, and it must keep
// the request within the model's image, PDF and byte counts. Counting in request order keeps
// earlier entries byte-identical as a lineage grows.
type mediaGate struct {
	e      *Engine
	q      store.Querier
	m      model.Model
	limits model.Limits
	images int64
	pdfs   int64
	bytes  int64
}

func (e *Engine) newGate(q store.Querier, m model.Model) *mediaGate {
	return &mediaGate{e: e, q: q, m: m, limits: m.MediaLimitsOf()}
}

// count takes the attachment parts already in a request (a continuation's earlier entries).
func (g *mediaGate) count(entries []model.Entry) {
	for _, en := range entries {
		for _, p := range en.Content {
			if p.Type == model.PartAttachment {
				g.take(p.MediaType, p.ByteSize)
			}
		}
	}
}

func (g *mediaGate) take(mediaType string, size int64) {
	if mediaType == "application/pdf" {
		g.pdfs++
	} else {
		g.images++
	}
	g.bytes += size
}

// admit decides one upload; it returns "" when it becomes a part (and counts it), else the
// index line's ending.
func (g *mediaGate) admit(ctx context.Context, id, mediaType string, size int64) (string, error) {
	if !g.m.AcceptsMedia(mediaType) {
		return endUnreadable, nil
	}
	l := g.limits
	pdf := mediaType == "application/pdf"
	if (pdf && l.PDFMaxBytes > 0 && size > l.PDFMaxBytes) || (!pdf && l.ImageMaxBytes > 0 && size > l.ImageMaxBytes) {
		return endTooLarge, nil
	}
	if !pdf && l.ImageMaxEdge > 0 && g.e.uploads != nil {
		found, err := g.e.uploads.Lookup(ctx, g.q, []string{id})
		if err != nil {
			return "", err
		}
		if u, ok := found[strings.ToLower(id)]; ok {
			w, h, err := g.e.uploads.ImageSize(ctx, g.q, u)
			if err != nil {
				return "", err
			}
			if w > l.ImageMaxEdge || h > l.ImageMaxEdge {
				return endTooLarge, nil
			}
		}
	}
	refused, err := store.MediaRefusals(ctx, g.q, g.m.Ref, []string{strings.ToLower(id)})
	if err != nil {
		return "", err
	}
	if refused[strings.ToLower(id)] {
		return endRefused, nil
	}
	if (pdf && l.PDFsMax > 0 && g.pdfs+1 > l.PDFsMax) || (!pdf && l.ImagesMax > 0 && g.images+1 > l.ImagesMax) ||
		(l.AttachmentsMaxBytes > 0 && g.bytes+size > l.AttachmentsMaxBytes) {
		return endOverLimit, nil
	}
	g.take(mediaType, size)
	return "", nil
}

// attachmentRef is one upload a request's user entry refers to, with the typed facts its
// attachment part or its index line is rendered from (docs/agent-tools.md#what-a-model-reads): a
// step's or turn's stored attachment list, a settled call's links and their uploads, or a stored
// attachment part's own fields; never an index line read back.
type attachmentRef struct {
	upload    string // public id
	name      string
	mediaType string // detected, without parameters
	size      int64
	sha256    string
	uri       string
	// source is the call's key for a result's media; "" for an input.
	source string
	// media says whether the upload is an image or PDF, which a model may read as a part.
	media bool
}

// inputRef is an input attachment as its step or turn stored it.
func inputRef(a Attachment) attachmentRef {
	return attachmentRef{upload: a.PublicID, name: a.Filename, mediaType: mediaType(a.ContentType), size: a.ByteSize,
		sha256: a.SHA256, uri: a.URI, media: envelope.IsMediaType(a.ContentType)}
}

// partRef is a stored attachment part's own facts.
func partRef(p model.Part) attachmentRef {
	return attachmentRef{upload: p.UploadPublicID, name: p.Name, mediaType: p.MediaType, size: p.ByteSize, sha256: p.SHA256,
		uri: envelope.UploadURIPrefix + p.UploadPublicID, source: p.SourceTask, media: true}
}

// part renders the ref: its attachment part when it is media and why is "", else its index line
// "[attachment NAME TYPE N bytes URI[ from TASK][ENDING]]", the ending saying why a media upload
// is not a part.
func (r attachmentRef) part(why string) model.Part {
	if r.media && why == "" {
		return model.Part{Type: model.PartAttachment, UploadPublicID: r.upload, MediaType: r.mediaType, Name: r.name,
			ByteSize: r.size, SHA256: r.sha256, SourceTask: r.source}
	}
	line := fmt.Sprintf("[attachment %s %s %d bytes %s", r.name, r.mediaType, r.size, r.uri)
	if r.source != "" {
		line += " from " + r.source
	}
	return model.Part{Type: model.PartText, Text: line + why + "]"}
}

// render decides the ref for the gate's request (docs/providers.md, media limits): media the
// gate admits is a part, anything else an index line, media with the ending that says why.
func (g *mediaGate) render(ctx context.Context, r attachmentRef) (model.Part, error) {
	why := ""
	if r.media {
		var err error
		if why, err = g.admit(ctx, r.upload, r.mediaType, r.size); err != nil {
			return model.Part{}, err
		}
	}
	return r.part(why), nil
}

// renderAll renders refs in order.
func (g *mediaGate) renderAll(ctx context.Context, refs []attachmentRef) ([]model.Part, error) {
	parts := make([]model.Part, 0, len(refs))
	for _, r := range refs {
		p, err := g.render(ctx, r)
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// inputRefs are the refs of a stored attachment list (a step's attachments, a turn's
// input_attachments).
func inputRefs(atts []Attachment) []attachmentRef {
	refs := make([]attachmentRef, len(atts))
	for i, a := range atts {
		refs[i] = inputRef(a)
	}
	return refs
}

// resultRefs are settled calls' media links (docs/agent-tools.md#what-a-model-reads), per row, in
// block order, each with its upload's detected type, stored size and digest and the link's name,
// the call's key as its source; the uploads are read once for all rows. Non-media links are part
// of the result's text and add nothing here. Only completed results carry media: a call that
// failed pairs with its <tool_use_error>, whatever it stored.
func (e *Engine) resultRefs(ctx context.Context, q store.Querier, rows []*store.Task) ([][]attachmentRef, error) {
	out := make([][]attachmentRef, len(rows))
	if e.uploads == nil {
		return out, nil
	}
	blocks := make([][]envelope.Block, len(rows))
	var ids []string
	for i, row := range rows {
		if row == nil || row.Status != StatusCompleted || row.Content == nil {
			continue
		}
		var err error
		if blocks[i], err = envelope.DecodeContent([]byte(*row.Content)); err != nil {
			return nil, fmt.Errorf("runs: stored content of %s: %w", row.Key, err)
		}
		for _, b := range blocks[i] {
			if id := b.UploadID(); id != "" {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	found, err := e.uploads.Lookup(ctx, q, ids)
	if err != nil {
		return nil, err
	}
	for i, bs := range blocks {
		for _, b := range bs {
			u, ok := found[strings.ToLower(b.UploadID())]
			if !ok || !u.IsMedia() {
				continue
			}
			out[i] = append(out[i], attachmentRef{upload: u.PublicID, name: b.Name, mediaType: u.MediaType(), size: u.ByteSize,
				sha256: u.SHA256, uri: u.URI(), source: rows[i].Key, media: true})
		}
	}
	return out, nil
}

// rerenderTurn renders an earlier turn's entries again for this request's model
// (docs/agent-tools.md#what-a-model-reads, docs/development.md#how-the-kernel-runs-work): history
// carries earlier turns' attachments, and the same upload may be an attachment part for one model
// and an index line for another. entries are the turn's lineage as its last sealed round stored
// them, after its own history. Each upload is decided again, in request order, at the place the
// assembly put it and from typed data: the opening entry (the one user entry before the first
// answer with more than one part) ends with the turn's input attachments, from its stored list;
// the user entry right after a round's results carries the media of that round's calls, each a
// stored attachment part's own fields or, where an index line stands, the call rows' links and
// their uploads (read once, when an index line needs them). Text is never read back as an
// upload. changed[i] reports whether entries[i] now differs, so that an unchanged model keeps the
// bytes.
func (e *Engine) rerenderTurn(ctx context.Context, q store.Querier, g *mediaGate, turn *store.Turn, entries []model.Entry) ([]bool, error) {
	changed := make([]bool, len(entries))
	inputs := inputRefs(turn.InputAttachments)
	var err error
	var media map[int64][]attachmentRef // by round number: its calls' media; read on first need
	answered, round := false, int64(0)
	for i := range entries {
		en := &entries[i]
		if en.Role == model.RoleUser && !answered && len(inputs) > 0 && len(en.Content) > len(inputs) {
			answered = true // the opening entry: no later entry holds inputs
			if changed[i], err = g.rerender(ctx, en.Content[len(en.Content)-len(inputs):], inputs); err != nil {
				return nil, err
			}
			continue
		}
		if en.Role != model.RoleAssistant {
			continue
		}
		answered = true
		if len(en.ToolCalls) == 0 {
			continue
		}
		round++
		j := i + len(en.ToolCalls) + 1
		if j >= len(entries) || entries[j].Role != model.RoleUser {
			continue
		}
		parts := entries[j].Content
		refs := make([]attachmentRef, 0, len(parts))
		for _, p := range parts {
			if p.Type == model.PartAttachment {
				refs = append(refs, partRef(p))
			}
		}
		if len(refs) < len(parts) {
			// An index line, or no media entry at all: the round's rows say which.
			if media == nil {
				if media, err = e.lineageMedia(ctx, q, turn.RunID); err != nil {
					return nil, err
				}
			}
			if refs = media[round]; len(refs) != len(parts) {
				continue
			}
		}
		if changed[j], err = g.rerender(ctx, parts, refs); err != nil {
			return nil, err
		}
	}
	return changed, nil
}

// rerender decides refs again into parts, the renderings they replace, in place; it reports
// whether any part changed.
func (g *mediaGate) rerender(ctx context.Context, parts []model.Part, refs []attachmentRef) (bool, error) {
	changed := false
	for k, r := range refs {
		p, err := g.render(ctx, r)
		if err != nil {
			return false, err
		}
		if old := parts[k]; p.Type != old.Type || p.Text != old.Text || p.UploadPublicID != old.UploadPublicID || p.MediaType != old.MediaType ||
			p.Name != old.Name || p.ByteSize != old.ByteSize || p.SHA256 != old.SHA256 || p.SourceTask != old.SourceTask {
			parts[k], changed = p, true
		}
	}
	return changed, nil
}

// lineageMedia is, by round number, the media a turn's rounds that answered with calls carried
// to their next round: their calls' media links in call and block order (resultRefs).
func (e *Engine) lineageMedia(ctx context.Context, q store.Querier, runID int64) (map[int64][]attachmentRef, error) {
	rows, err := store.LineageRows(ctx, q, runID, "r1")
	if err != nil {
		return nil, err
	}
	byKey := make(map[string]*store.Task, len(rows))
	for i := range rows {
		byKey[rows[i].Key] = &rows[i]
	}
	var rounds []int64
	var calls []*store.Task
	for i := range rows {
		r := &rows[i]
		if r.Kind != KindModel || r.LineageRoot != "r1" || r.AnswerCalls == nil {
			continue
		}
		for _, c := range r.AnswerCalls {
			rounds, calls = append(rounds, r.RoundNumber), append(calls, byKey[c.TaskKey])
		}
	}
	refs, err := e.resultRefs(ctx, q, calls)
	if err != nil {
		return nil, err
	}
	out := map[int64][]attachmentRef{}
	for i, r := range refs {
		out[rounds[i]] = append(out[rounds[i]], r...)
	}
	return out, nil
}
