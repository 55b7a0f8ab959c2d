package wire

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/nexuskernel/nexus/core/model"
)

// AppendBase64 appends the base64 of an attachment part's bytes, read through media. The bytes
// are counted and hashed while they are encoded; a count or SHA-256 that differs from the part's,
// or an upload that cannot be opened, fails the round provider_error.
func AppendBase64(ctx context.Context, dst []byte, media model.MediaReader, p model.Part) ([]byte, error) {
	fail := func() ([]byte, error) {
		return nil, &model.Error{Key: model.KeyProviderError, Detail: fmt.Sprintf("attachment %s could not be read", p.UploadPublicID)}
	}
	if media == nil {
		return fail()
	}
	r, err := media.Open(ctx, p.UploadPublicID)
	if err != nil {
		return fail()
	}
	defer r.Close()
	h := sha256.New()
	enc := base64.StdEncoding
	start := len(dst)
	dst = append(dst, make([]byte, enc.EncodedLen(int(max(p.ByteSize, 0))))...)
	w := &sliceWriter{b: dst[:start]}
	bw := base64.NewEncoder(enc, w)
	n, err := io.Copy(io.MultiWriter(bw, h), io.LimitReader(r, p.ByteSize+1))
	if err != nil || bw.Close() != nil {
		return fail()
	}
	if n != p.ByteSize || hex.EncodeToString(h.Sum(nil)) != p.SHA256 {
		return fail()
	}
	return w.b, nil
}

type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }
