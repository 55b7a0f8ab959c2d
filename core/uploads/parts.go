package uploads

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
)

// The uploads a model request refers to (docs/agent-tools.md#what-a-model-reads, docs/providers.md
// media limits): a turn's or a model step's input attachments, checked as the caller's own and
// bound to the row that keeps them, and the media links of settled results. Each becomes, for the
// request's model, an attachment part the model reads or an index line saying what the upload is
// and, for media, why it is not a part. Where each sits in the request, and which results carry
// media, is the run engine's assembly; what each becomes for the model is decided here, from typed
// data only: never from an index line read back.

// Inputs checks that every id is one of p's own complete uploads (422 unknown_input_upload at
// path[i] otherwise, CheckInputs) and answers their descriptors in order, as a turn or a model step
// stores them. The uploads are locked until tx ends, so the caller binds them in it
// (BindAttachments). A nil Service (a server without an upload store) refuses every id.
func (s *Service) Inputs(ctx context.Context, tx *store.Tx, p *identity.Principal, ids []string, path string) ([]store.Attachment, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if s == nil {
		return nil, refusal.Newf(refusal.Unprocessable, CodeUnknownInputUpload, "%s[0]: no upload %s of yours exists.", path, ids[0]).
			With("path", path+"[0]")
	}
	if err := CheckInputs(ctx, tx, p, ids, path); err != nil {
		return nil, err
	}
	found, err := s.Lookup(ctx, tx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]store.Attachment, 0, len(ids))
	for _, id := range ids {
		u, ok := found[strings.ToLower(id)]
		if !ok {
			return nil, fmt.Errorf("uploads: upload %s vanished after its check", id)
		}
		out = append(out, store.Attachment{PublicID: u.PublicID, URI: u.URI(), Filename: u.Filename, ContentType: u.ContentType,
			ByteSize: u.ByteSize, SHA256: u.SHA256})
	}
	return out, nil
}

// BindAttachments keeps a row's input attachments alive as long as the row (Bind).
func BindAttachments(ctx context.Context, tx *store.Tx, t Target, atts []store.Attachment, at time.Time) error {
	if len(atts) == 0 {
		return nil
	}
	ids := make([]string, len(atts))
	for i, a := range atts {
		ids[i] = a.PublicID
	}
	return Bind(ctx, tx, t, ids, at)
}

// The endings of an attachment index line that say why the upload is not an attachment part
// (docs/providers.md, media limits).
const (
	endUnreadable = ": not readable by this model"
	endTooLarge   = ": too large for this model"
	endRefused    = ": refused by this model"
	endOverLimit  = ": over this request's attachment limit"
)

// Ref is one upload a request's user entry refers to, with the typed facts its attachment part or
// its index line is rendered from (docs/agent-tools.md#what-a-model-reads): a step's or turn's
// stored attachment list (InputRef), a settled call's links and their uploads (ResultRefs), or a
// stored attachment part's own fields (PartRef).
type Ref struct {
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

// InputRef is an input attachment as its step or turn stored it.
func InputRef(a store.Attachment) Ref {
	return Ref{upload: a.PublicID, name: a.Filename, mediaType: mediaTypeOf(a.ContentType), size: a.ByteSize,
		sha256: a.SHA256, uri: a.URI, media: envelope.IsMediaType(a.ContentType)}
}

// InputRefs are the refs of a stored attachment list (a step's attachments, a turn's
// input_attachments).
func InputRefs(atts []store.Attachment) []Ref {
	refs := make([]Ref, len(atts))
	for i, a := range atts {
		refs[i] = InputRef(a)
	}
	return refs
}

// PartRef is a stored attachment part's own facts.
func PartRef(p model.Part) Ref {
	return Ref{upload: p.UploadPublicID, name: p.Name, mediaType: p.MediaType, size: p.ByteSize, sha256: p.SHA256,
		uri: envelope.UploadURIPrefix + p.UploadPublicID, source: p.SourceTask, media: true}
}

// part renders the ref: its attachment part when it is media and why is "", else its index line
// "[attachment NAME TYPE N bytes URI[ from TASK][ENDING]]", the ending saying why a media upload
// is not a part.
func (r Ref) part(why string) model.Part {
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

// Linked is a settled result whose links may name uploads: the key of the call it settled and its
// stored content (envelope.DecodeContent); nil Content links nothing.
type Linked struct {
	Source  string
	Content []byte
}

// ResultRefs are settled results' media links (docs/agent-tools.md#what-a-model-reads), per
// result, in block order, each with its upload's detected type, stored size and digest and the
// link's name, the result's call as its source; the uploads are read once for all results.
// Non-media links are part of the result's text and add nothing here. A nil Service links none.
func (s *Service) ResultRefs(ctx context.Context, q store.Querier, results []Linked) ([][]Ref, error) {
	out := make([][]Ref, len(results))
	if s == nil {
		return out, nil
	}
	blocks := make([][]envelope.Block, len(results))
	var ids []string
	for i, r := range results {
		if r.Content == nil {
			continue
		}
		var err error
		if blocks[i], err = envelope.DecodeContent(r.Content); err != nil {
			return nil, fmt.Errorf("uploads: stored content of %s: %w", r.Source, err)
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
	found, err := s.Lookup(ctx, q, ids)
	if err != nil {
		return nil, err
	}
	for i, bs := range blocks {
		for _, b := range bs {
			u, ok := found[strings.ToLower(b.UploadID())]
			if !ok || !u.IsMedia() {
				continue
			}
			out[i] = append(out[i], Ref{upload: u.PublicID, name: b.Name, mediaType: u.MediaType(), size: u.ByteSize,
				sha256: u.SHA256, uri: u.URI(), source: results[i].Source, media: true})
		}
	}
	return out, nil
}

// Gate decides, in request order, whether each media upload of a request becomes an attachment
// part: the model must accept its kind, its size and an image's edges must fit the model's limits,
// the provider must not have refused it for this model before, and it must keep the request within
// the model's image, PDF and byte counts. Counting in request order keeps earlier entries
// byte-identical as a lineage grows.
type Gate struct {
	s      *Service
	q      store.Querier
	m      model.Model
	limits model.Limits
	images int64
	pdfs   int64
	bytes  int64
}

// Gate is a gate for one request to m, reading through q. A nil Service reads no image's edges.
func (s *Service) Gate(q store.Querier, m model.Model) *Gate {
	return &Gate{s: s, q: q, m: m, limits: m.MediaLimitsOf()}
}

// Count takes the attachment parts already in a request (a continuation's earlier entries).
func (g *Gate) Count(entries []model.Entry) {
	for _, en := range entries {
		for _, p := range en.Content {
			if p.Type == model.PartAttachment {
				g.take(p.MediaType, p.ByteSize)
			}
		}
	}
}

func (g *Gate) take(mediaType string, size int64) {
	if mediaType == "application/pdf" {
		g.pdfs++
	} else {
		g.images++
	}
	g.bytes += size
}

// admit decides one upload; it returns "" when it becomes a part (and counts it), else the
// index line's ending.
func (g *Gate) admit(ctx context.Context, id, mediaType string, size int64) (string, error) {
	if !g.m.AcceptsMedia(mediaType) {
		return endUnreadable, nil
	}
	l := g.limits
	pdf := mediaType == "application/pdf"
	if (pdf && l.PDFMaxBytes > 0 && size > l.PDFMaxBytes) || (!pdf && l.ImageMaxBytes > 0 && size > l.ImageMaxBytes) {
		return endTooLarge, nil
	}
	if !pdf && l.ImageMaxEdge > 0 && g.s != nil {
		found, err := g.s.Lookup(ctx, g.q, []string{id})
		if err != nil {
			return "", err
		}
		if u, ok := found[strings.ToLower(id)]; ok {
			w, h, err := g.s.ImageSize(ctx, g.q, u)
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

// Render decides the ref for the gate's request (docs/providers.md, media limits): media the gate
// admits is a part, anything else an index line, media with the ending that says why.
func (g *Gate) Render(ctx context.Context, r Ref) (model.Part, error) {
	why := ""
	if r.media {
		var err error
		if why, err = g.admit(ctx, r.upload, r.mediaType, r.size); err != nil {
			return model.Part{}, err
		}
	}
	return r.part(why), nil
}

// RenderAll renders refs in order.
func (g *Gate) RenderAll(ctx context.Context, refs []Ref) ([]model.Part, error) {
	parts := make([]model.Part, 0, len(refs))
	for _, r := range refs {
		p, err := g.Render(ctx, r)
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// Rerender decides refs again into parts, the renderings they replace, in place; it reports
// whether any part changed.
func (g *Gate) Rerender(ctx context.Context, parts []model.Part, refs []Ref) (bool, error) {
	changed := false
	for k, r := range refs {
		p, err := g.Render(ctx, r)
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
