package uploads

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/store"
)

// Visibility decides whether a member who did not create an upload may read it
// (docs/api.md#uploads): a member of the workspace of a run whose
// task result binds it, or of a conversation whose turn input binds it. The run engine may supply
// its own (reading runs and conversations); the default reads the bindings' workspaces.
type Visibility interface {
	Visible(ctx context.Context, q store.Querier, reader *identity.Principal, u *Upload) (bool, error)
}

// BindingVisibility grants a member every upload bound in a workspace it belongs to: binding
// rows carry the workspace of the run or conversation that binds, so membership there is the
// read standing docs/api.md#uploads states.
type BindingVisibility struct{}

// Visible reports whether a binding of u lies in one of the reader's workspaces.
func (BindingVisibility) Visible(ctx context.Context, q store.Querier, reader *identity.Principal, u *Upload) (bool, error) {
	if !u.Bound {
		return false, nil
	}
	if reader.IsUser() {
		return store.UploadReadableByUser(ctx, q, u.ID, reader.ID)
	}
	return store.UploadBoundInWorkspace(ctx, q, u.ID, reader.WorkspaceID)
}

// ForMember returns the upload ref names when the member may read it: its creator, or a member
// Visibility admits. Anything else (absent, incomplete, foreign, reclaimed) is 404 not_found,
// indistinguishably; a ref that is not a UUID is 400 parameter_invalid.
func (s *Service) ForMember(ctx context.Context, p *identity.Principal, ref string) (*Upload, error) {
	u, err := s.complete(ctx, ref)
	if err != nil {
		return nil, err
	}
	if u.Creator.Kind == p.Kind && u.Creator.ID == p.ID {
		return u, nil
	}
	ok, err := s.visibility.Visible(ctx, s.store.Reader(), p, u)
	if err != nil {
		return nil, fmt.Errorf("uploads: visibility: %w", err)
	}
	if !ok {
		return nil, errNoUpload(ref)
	}
	return u, nil
}

// ForExecutor returns the upload ref names when it is the executor's own capture; anything
// else is 404 not_found, a ref that is not a UUID 400 parameter_invalid.
func (s *Service) ForExecutor(ctx context.Context, e *identity.Executor, ref string) (*Upload, error) {
	u, err := s.complete(ctx, ref)
	if err != nil {
		return nil, err
	}
	if !u.Creator.IsExecutor() || u.Creator.ID != e.ID {
		return nil, errNoUpload(ref)
	}
	return u, nil
}

func (s *Service) complete(ctx context.Context, ref string) (*Upload, error) {
	id, ok := canonicalID(ref)
	if !ok {
		return nil, errMalformedID(ref)
	}
	r, err := store.CompleteUploadByPublicID(ctx, s.store.Reader(), id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errNoUpload(ref)
	}
	if err != nil {
		return nil, err
	}
	return uploadOf(r), nil
}

// Lookup reads the complete uploads among ids, without any visibility check, keyed by public
// id: for the run engine's media classification and attachment parts. Ids that are malformed,
// unknown or incomplete are absent from the answer.
func (s *Service) Lookup(ctx context.Context, q store.Querier, ids []string) (map[string]*Upload, error) {
	rows, err := store.CompleteUploadsByPublicIDs(ctx, q, canonicalIDs(ids))
	if err != nil {
		return nil, err
	}
	out := make(map[string]*Upload, len(rows))
	for i := range rows {
		out[rows[i].PublicID] = uploadOf(&rows[i])
	}
	return out, nil
}

// Open returns a reader of length bytes of u starting at offset, streamed from the store one
// chunk at a time (at most ChunkSize in memory), without any visibility check: the caller has
// decided who reads. offset and length must lie within the upload. A chunk that has gone
// missing meanwhile (the upload was reclaimed mid-read) fails the read.
func (s *Service) Open(ctx context.Context, u *Upload, offset, length int64) (io.Reader, error) {
	if offset < 0 || length < 0 || offset+length > u.ByteSize {
		return nil, fmt.Errorf("uploads: range %d+%d outside %d bytes", offset, length, u.ByteSize)
	}
	return &chunkReader{ctx: ctx, q: s.store.Reader(), uploadID: u.ID, pos: offset, end: offset + length}, nil
}

// Media opens complete uploads' bytes by public id, reading their descriptors through q, without
// any visibility check: what a model provider reads an attachment part's bytes through (the run
// engine decided the part). It is a model.MediaReader.
type Media struct {
	s *Service
	q store.Querier
}

// Media is a reader of uploads' bytes by public id through q.
func (s *Service) Media(q store.Querier) Media { return Media{s: s, q: q} }

// Open reads the whole upload; an id that names no complete upload is an error.
func (m Media) Open(ctx context.Context, publicID string) (io.ReadCloser, error) {
	found, err := m.s.Lookup(ctx, m.q, []string{publicID})
	if err != nil {
		return nil, err
	}
	u, ok := found[strings.ToLower(publicID)]
	if !ok {
		return nil, fmt.Errorf("uploads: no upload %s", publicID)
	}
	r, err := m.s.Open(ctx, u, 0, u.ByteSize)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(r), nil
}

// chunkReader reads [pos, end) of an upload chunk by chunk.
type chunkReader struct {
	ctx      context.Context
	q        store.Querier
	uploadID int64
	pos, end int64
	// cur is the unread rest of the current chunk.
	cur []byte
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.pos >= r.end {
		return 0, io.EOF
	}
	if len(r.cur) == 0 {
		seq := r.pos / ChunkSize
		data, err := store.UploadChunk(r.ctx, r.q, r.uploadID, seq)
		if err != nil {
			return 0, fmt.Errorf("uploads: chunk %d of upload %d: %w", seq, r.uploadID, err)
		}
		off := r.pos - seq*ChunkSize
		if off >= int64(len(data)) {
			return 0, fmt.Errorf("uploads: chunk %d of upload %d is %d bytes, shorter than expected", seq, r.uploadID, len(data))
		}
		r.cur = data[off:]
		if rest := r.end - r.pos; int64(len(r.cur)) > rest {
			r.cur = r.cur[:rest]
		}
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	r.pos += int64(n)
	return n, nil
}
