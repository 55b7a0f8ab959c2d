package uploads

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/nexuskernel/nexus/core/store"
)

// ReadError is a failure to read the bytes being uploaded (the client went away, the body broke
// off, or the transport's own bound tripped): the client's fault, not the store's. Nothing of
// the upload is kept. Unwrap gives the reader's error.
type ReadError struct{ Err error }

func (e *ReadError) Error() string { return "uploads: reading the upload: " + e.Err.Error() }
func (e *ReadError) Unwrap() error { return e.Err }

// Ingest streams r into the store as a new upload by c named filename (cleaned by
// CleanFilename) and returns it complete. Size and SHA-256 are computed as the bytes pass and
// the type is detected from the first SniffBytes; whatever the client declared is never used.
//
// Each chunk is written in its own short transaction; the row becomes readable and bindable
// only in the transaction that writes the last chunk. An upload that fits in one chunk is
// written in one transaction. Over MaxBytes the answer is 413 content_too_large and nothing is
// kept; a read failure is a *ReadError and nothing is kept either. A clean-up that fails (the
// store went away too) leaves an incomplete row, which the sweeper reclaims.
func (s *Service) Ingest(ctx context.Context, c Creator, filename string, r io.Reader) (*Upload, error) {
	row := &store.Upload{
		PublicID:        store.NewPublicID(),
		CreatorKind:     c.Kind,
		CreatorPublicID: c.PublicID,
		Filename:        CleanFilename(filename),
		CreatedAt:       store.Millis(s.now()),
	}
	switch {
	case c.Kind == CreatorUser:
		row.CreatorUserID = sql.NullInt64{Int64: c.ID, Valid: true}
	case c.Kind == CreatorAgent:
		row.CreatorAgentID = sql.NullInt64{Int64: c.ID, Valid: true}
	case c.IsExecutor():
		row.CreatorExecutorID = sql.NullInt64{Int64: c.ID, Valid: true}
	default:
		return nil, fmt.Errorf("uploads: unknown creator kind %q", c.Kind)
	}
	in := &ingest{s: s, row: row, src: io.LimitReader(r, MaxBytes+1), sum: sha256.New(), buf: make([]byte, ChunkSize)}
	u, err := in.run(ctx)
	if err != nil {
		if in.stored {
			s.discard(ctx, row.ID)
		}
		// A request whose client went away fails its store writes too; that is still the
		// client's doing, not a store fault.
		if ctxErr := ctx.Err(); ctxErr != nil && !errors.As(err, new(*ReadError)) {
			return nil, &ReadError{Err: ctxErr}
		}
		return nil, err
	}
	return u, nil
}

// ingest is one upload on its way into the store.
type ingest struct {
	s   *Service
	row *store.Upload
	src io.Reader
	sum hash.Hash
	buf []byte
	// size counts the bytes read so far.
	size int64
	// stored is set once the row exists, so that a failure deletes it.
	stored bool
}

// next reads the next chunk into buf; last reports that the source ended within it. Only a
// clean io.EOF ends the source: any other error, io.ErrUnexpectedEOF included (a multipart
// part that lost its closing boundary), is a read failure. io.ReadFull cannot tell the two
// apart, hence the loop.
func (in *ingest) next() (chunk []byte, last bool, err error) {
	n := 0
	for n < len(in.buf) {
		m, err := in.src.Read(in.buf[n:])
		n += m
		if err == io.EOF {
			last = true
			break
		}
		if err != nil {
			return nil, false, &ReadError{Err: err}
		}
	}
	in.size += int64(n)
	if in.size > MaxBytes {
		return nil, false, errTooLarge
	}
	in.sum.Write(in.buf[:n])
	return in.buf[:n], last, nil
}

func (in *ingest) run(ctx context.Context) (*Upload, error) {
	chunk, last, err := in.next()
	if err != nil {
		return nil, err
	}
	head := chunk
	if len(head) > SniffBytes {
		head = head[:SniffBytes]
	}
	contentType := in.s.detect(head)
	st := in.s.store
	if last {
		// The whole file is one chunk: row, bytes and completion in one transaction.
		in.complete(contentType)
		err := st.Write(ctx, func(tx *store.Tx) error {
			if err := store.InsertUpload(ctx, tx, in.row); err != nil {
				return err
			}
			if len(chunk) == 0 {
				return nil
			}
			return store.InsertUploadChunk(ctx, tx, in.row.ID, 0, chunk)
		})
		if err != nil {
			return nil, fmt.Errorf("uploads: store: %w", err)
		}
		return uploadOf(in.row), nil
	}
	err = st.Write(ctx, func(tx *store.Tx) error {
		if err := store.InsertUpload(ctx, tx, in.row); err != nil {
			return err
		}
		return store.InsertUploadChunk(ctx, tx, in.row.ID, 0, chunk)
	})
	if err != nil {
		return nil, fmt.Errorf("uploads: store: %w", err)
	}
	in.stored = true
	for seq := int64(1); ; seq++ {
		chunk, last, err := in.next()
		if err != nil {
			return nil, err
		}
		if !last {
			if err := st.Write(ctx, func(tx *store.Tx) error {
				return store.InsertUploadChunk(ctx, tx, in.row.ID, seq, chunk)
			}); err != nil {
				return nil, fmt.Errorf("uploads: store: %w", err)
			}
			continue
		}
		// The last chunk and the completion commit together: the row is never complete
		// without every byte.
		in.complete(contentType)
		err = st.Write(ctx, func(tx *store.Tx) error {
			if len(chunk) > 0 {
				if err := store.InsertUploadChunk(ctx, tx, in.row.ID, seq, chunk); err != nil {
					return err
				}
			}
			ok, err := store.CompleteUpload(ctx, tx, in.row.ID, in.row.ByteSize, in.row.SHA256.String, contentType, in.row.CompletedAt.Int64)
			if err == nil && !ok {
				err = errors.New("the incomplete row was reclaimed meanwhile")
			}
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("uploads: store: %w", err)
		}
		return uploadOf(in.row), nil
	}
}

// complete fills the row's measured facts.
func (in *ingest) complete(contentType string) {
	in.row.ByteSize = in.size
	in.row.SHA256 = sql.NullString{String: hex.EncodeToString(in.sum.Sum(nil)), Valid: true}
	in.row.ContentType = sql.NullString{String: contentType, Valid: true}
	in.row.CompletedAt = sql.NullInt64{Int64: store.Millis(in.s.now()), Valid: true}
}

// discard deletes an upload that will not complete. It runs after the request's context may be
// done; what it cannot delete, the sweeper reclaims.
func (s *Service) discard(ctx context.Context, uploadID int64) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), discardTimeout)
	defer cancel()
	err := s.store.Write(ctx, func(tx *store.Tx) error {
		return store.DeleteUploads(ctx, tx, []int64{uploadID})
	})
	if err != nil {
		s.log.Warn("discarding an incomplete upload failed; the sweeper will reclaim it", "upload_id", uploadID, "error", err)
	}
}
