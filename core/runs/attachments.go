package runs

import (
	"context"
	"fmt"
	"io"
	"mime"
	"regexp"
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

// inputParts renders a turn's or step's attachments for the request's model (docs/providers.md, media limits): an
// admitted media upload is an attachment part; anything else is an index line, media with the
// ending that says why.
func (e *Engine) inputParts(ctx context.Context, g *mediaGate, atts []Attachment) ([]model.Part, error) {
	parts := make([]model.Part, 0, len(atts))
	for _, a := range atts {
		mt := mediaType(a.ContentType)
		media := envelope.IsMediaType(a.ContentType)
		why := ""
		if media {
			var err error
			if why, err = g.admit(ctx, a.PublicID, mt, a.ByteSize); err != nil {
				return nil, err
			}
			if why == "" {
				parts = append(parts, model.Part{Type: model.PartAttachment, UploadPublicID: a.PublicID, MediaType: mt,
					Name: a.Filename, ByteSize: a.ByteSize, SHA256: a.SHA256})
				continue
			}
		}
		parts = append(parts, model.Part{Type: model.PartText, Text: fmt.Sprintf("[attachment %s %s %d bytes %s%s]", a.Filename, mt, a.ByteSize, a.URI, why)})
	}
	return parts, nil
}

// mediaReader opens attachment bytes for a provider through the upload store.
type mediaReader struct {
	svc *uploads.Service
	q   store.Querier
}

func (m mediaReader) Open(ctx context.Context, uploadPublicID string) (io.ReadCloser, error) {
	found, err := m.svc.Lookup(ctx, m.q, []string{uploadPublicID})
	if err != nil {
		return nil, err
	}
	u, ok := found[strings.ToLower(uploadPublicID)]
	if !ok {
		return nil, fmt.Errorf("runs: no upload %s", uploadPublicID)
	}
	r, err := m.svc.Open(ctx, u, 0, u.ByteSize)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(r), nil
}

// resultMedia renders a settled call's media links for the request's model (docs/agent-tools.md#what-a-model-reads),
// in block order: a media upload the model accepts is an attachment part naming the call's key
// as its source; any other media upload the index line "[attachment NAME TYPE BYTES bytes
// nexus://uploads/ID from TASK: not readable by this model]". NAME is the link's name, TYPE and
// BYTES the upload's detected type and stored size, never the link's. Non-media links are part
// of the result's text and add nothing here. Only completed results carry media: a call that
// failed pairs with its <tool_use_error>, whatever it stored.
func (e *Engine) resultMedia(ctx context.Context, q store.Querier, g *mediaGate, row *store.Task) ([]model.Part, error) {
	if row == nil || row.Status != StatusCompleted || row.Content == nil || e.uploads == nil {
		return nil, nil
	}
	blocks, err := envelope.DecodeContent([]byte(*row.Content))
	if err != nil {
		return nil, fmt.Errorf("runs: stored content of %s: %w", row.Key, err)
	}
	var ids []string
	for _, b := range blocks {
		if id := b.UploadID(); id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	found, err := e.uploads.Lookup(ctx, q, ids)
	if err != nil {
		return nil, err
	}
	var parts []model.Part
	for _, b := range blocks {
		u, ok := found[strings.ToLower(b.UploadID())]
		if !ok || !u.IsMedia() {
			continue
		}
		mt := u.MediaType()
		why, err := g.admit(ctx, u.PublicID, mt, u.ByteSize)
		if err != nil {
			return nil, err
		}
		if why == "" {
			parts = append(parts, model.Part{Type: model.PartAttachment, UploadPublicID: u.PublicID, MediaType: mt,
				Name: b.Name, ByteSize: u.ByteSize, SHA256: u.SHA256, SourceTask: row.Key})
			continue
		}
		parts = append(parts, model.Part{Type: model.PartText,
			Text: fmt.Sprintf("[attachment %s %s %d bytes %s from %s%s]", b.Name, mt, u.ByteSize, u.URI(), row.Key, why)})
	}
	return parts, nil
}

// indexLine reads an attachment index line of either shape (docs/agent-tools.md#what-a-model-reads): name, type, size,
// upload id, the source task of a result's media, and whether it says the model cannot read it.
var indexLine = regexp.MustCompile(`^\[attachment (.+) (\S+) (\d+) bytes nexus://uploads/([0-9a-f-]{36})( from ([A-Za-z0-9][A-Za-z0-9_-]{0,63}))?(: not readable by this model|: too large for this model|: refused by this model|: over this request's attachment limit)?\]$`)

// rerenderMedia renders a user entry's attachments again for another model (docs/agent-tools.md#what-a-model-reads,
// docs/development.md#how-the-kernel-runs-work): history carries earlier turns' attachments, and the same upload may be an attachment
// part for one model and an index line for another. An attachment part the model does not
// accept becomes its index line; the index line of media it does accept becomes the part again,
// from the upload's stored facts. Other parts, and entries of other roles, are left as they
// are; changed is false when nothing differs, so that an unchanged model keeps the bytes.
func (e *Engine) rerenderMedia(ctx context.Context, q store.Querier, g *mediaGate, en model.Entry) (model.Entry, bool, error) {
	if en.Role != model.RoleUser {
		return en, false, nil
	}
	changed := false
	parts := make([]model.Part, len(en.Content))
	for i, p := range en.Content {
		parts[i] = p
		switch {
		case p.Type == model.PartAttachment:
			why, err := g.admit(ctx, p.UploadPublicID, p.MediaType, p.ByteSize)
			if err != nil {
				return en, false, err
			}
			if why == "" {
				continue
			}
			line := fmt.Sprintf("[attachment %s %s %d bytes %s%s", p.Name, p.MediaType, p.ByteSize, envelope.UploadURIPrefix, p.UploadPublicID)
			if p.SourceTask != "" {
				line += " from " + p.SourceTask
			}
			parts[i] = model.Part{Type: model.PartText, Text: line + why + "]"}
			changed = true
		case p.Type == model.PartText && e.uploads != nil && strings.HasPrefix(p.Text, "[attachment "):
			g0 := indexLine.FindStringSubmatch(p.Text)
			if g0 == nil || g0[7] == "" || !g.m.AcceptsMedia(g0[2]) {
				continue
			}
			found, err := e.uploads.Lookup(ctx, q, []string{g0[4]})
			if err != nil {
				return en, false, err
			}
			u, ok := found[g0[4]]
			if !ok || !u.IsMedia() || u.MediaType() != g0[2] {
				continue
			}
			why, err := g.admit(ctx, u.PublicID, u.MediaType(), u.ByteSize)
			if err != nil {
				return en, false, err
			}
			if why != "" {
				if why != g0[7] {
					parts[i] = model.Part{Type: model.PartText, Text: strings.TrimSuffix(strings.TrimSuffix(p.Text, "]"), g0[7]) + why + "]"}
					changed = true
				}
				continue
			}
			parts[i] = model.Part{Type: model.PartAttachment, UploadPublicID: u.PublicID, MediaType: u.MediaType(), Name: g0[1],
				ByteSize: u.ByteSize, SHA256: u.SHA256, SourceTask: g0[6]}
			changed = true
		}
	}
	if !changed {
		return en, false, nil
	}
	en.Content = parts
	return en, true, nil
}
