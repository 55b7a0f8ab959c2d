package httpapi

import (
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/uploads"
)

// multipartAllowance is the room an upload body has beyond the file bound: the multipart
// framing, the part headers and a few small fields beside the file part.
const multipartAllowance = 64 << 10

// uploadBodyLimit bounds an upload door's body (docs/api.md#conventions defers it to
// docs/api.md#uploads): the file bound itself is counted on the file part's bytes by
// uploads.Ingest.
const uploadBodyLimit = uploads.MaxBytes + multipartAllowance

// The upload doors (docs/api.md#uploads): member uploads and executor captures, their descriptors
// and bytes. They need Deps.Uploads; without it they are not served.
func (a *API) uploadRoutes() {
	if a.deps.Uploads == nil {
		return
	}
	stream := routeOpts{bodyLimit: uploadBodyLimit, stream: true}
	a.handle("POST /agent_api/v1/uploads", stream, func(w http.ResponseWriter, r *http.Request, c *Call) error {
		return a.ingestUpload(w, r, uploads.MemberCreator(c.Member))
	})
	a.handle("GET /agent_api/v1/uploads/{public_id}", routeOpts{}, func(w http.ResponseWriter, r *http.Request, c *Call) error {
		u, err := a.deps.Uploads.ForMember(r.Context(), c.Member, r.PathValue("public_id"))
		return a.describeUpload(w, u, err)
	})
	a.handle("GET /agent_api/v1/uploads/{public_id}/bytes", routeOpts{}, func(w http.ResponseWriter, r *http.Request, c *Call) error {
		u, err := a.deps.Uploads.ForMember(r.Context(), c.Member, r.PathValue("public_id"))
		if err != nil {
			return err
		}
		return a.serveUploadBytes(w, r, c, u)
	})
	a.handle("POST /agent_api/v1/executor/uploads", stream, func(w http.ResponseWriter, r *http.Request, c *Call) error {
		return a.ingestUpload(w, r, uploads.ExecutorCreator(c.Executor))
	})
	a.handle("GET /agent_api/v1/executor/uploads/{public_id}", routeOpts{}, func(w http.ResponseWriter, r *http.Request, c *Call) error {
		u, err := a.deps.Uploads.ForExecutor(r.Context(), c.Executor, r.PathValue("public_id"))
		return a.describeUpload(w, u, err)
	})
	a.handle("GET /agent_api/v1/executor/uploads/{public_id}/bytes", routeOpts{}, func(w http.ResponseWriter, r *http.Request, c *Call) error {
		u, err := a.deps.Uploads.ForExecutor(r.Context(), c.Executor, r.PathValue("public_id"))
		if err != nil {
			return err
		}
		return a.serveUploadBytes(w, r, c, u)
	})
}

// uploadJSON is the descriptor (docs/api.md#uploads).
type uploadJSON struct {
	PublicID    string      `json:"public_id"`
	URI         string      `json:"uri"`
	Filename    string      `json:"filename"`
	ContentType string      `json:"content_type"`
	ByteSize    int64       `json:"byte_size"`
	SHA256      string      `json:"sha256"`
	Creator     creatorJSON `json:"creator"`
	Bound       bool        `json:"bound"`
	CreatedAt   string      `json:"created_at"`
	ExpiresAt   *string     `json:"expires_at"`
}

type creatorJSON struct {
	Kind     string `json:"kind"`
	PublicID string `json:"public_id"`
}

func uploadWire(u *uploads.Upload) uploadJSON {
	var expires *int64
	if at, ok := u.ExpiresAt(); ok {
		expires = &at
	}
	return uploadJSON{
		PublicID: u.PublicID, URI: u.URI(), Filename: u.Filename, ContentType: u.ContentType, ByteSize: u.ByteSize,
		SHA256: u.SHA256, Creator: creatorJSON{Kind: u.Creator.Kind, PublicID: u.Creator.PublicID}, Bound: u.Bound,
		CreatedAt: formatTime(u.CreatedAt), ExpiresAt: formatOptTime(expires),
	}
}

type uploadBody struct {
	Upload uploadJSON `json:"upload"`
}

func (a *API) describeUpload(w http.ResponseWriter, u *uploads.Upload, err error) error {
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, uploadBody{uploadWire(u)})
	return nil
}

var (
	errNotMultipart = refusal.New(refusal.BadRequest, refusal.CodeParameterInvalid,
		"An upload is a multipart/form-data body with one file part named file.")
	errNoFilePart = refusal.New(refusal.BadRequest, refusal.CodeParameterMissing,
		"The body has no file part named file.").With("path", "file")
	errNotAFile = refusal.New(refusal.BadRequest, refusal.CodeParameterMissing,
		"The part named file is not a file: its Content-Disposition has no filename.").With("path", "file")
	errBrokenBody = refusal.New(refusal.BadRequest, refusal.CodeParameterInvalid,
		"The upload body broke off or is not well-formed multipart; nothing was kept.")
)

// ingestUpload streams the file part of a multipart body into the store (docs/api.md#uploads).
// The file part is the one field an upload carries: when a part of another name comes before
// it, the upload is refused 400 parameter_invalid at that name before anything is stored, like
// an unknown key of a JSON body (a body with no file part at all is parameter_missing, as
// before); the body ends with the file part, and nothing after it is read.
func (a *API) ingestUpload(w http.ResponseWriter, r *http.Request, creator uploads.Creator) error {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return errNotMultipart
	}
	stall := newStallReader(w, r.Body, a.deps.Timeouts)
	defer stall.done()
	body := http.MaxBytesReader(w, io.NopCloser(stall), uploadBodyLimit)
	mr := multipart.NewReader(body, params["boundary"])
	unknown, sawUnknown := "", false
	for {
		// A raw part keeps the bytes as sent (no quoted-printable decoding): the file is stored
		// exactly as the client framed it.
		part, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			return errNoFilePart
		}
		if err != nil {
			return uploadReadFailure(err)
		}
		name, filename, isFile := formPart(part)
		if name != "file" {
			if !sawUnknown {
				unknown, sawUnknown = name, true
			}
			continue
		}
		if !isFile {
			return errNotAFile
		}
		if sawUnknown {
			return errUnknownPart(unknown)
		}
		u, err := a.deps.Uploads.Ingest(r.Context(), creator, filename, part)
		if err != nil {
			var re *uploads.ReadError
			if errors.As(err, &re) {
				return uploadReadFailure(re.Err)
			}
			return err
		}
		writeJSON(w, http.StatusCreated, uploadBody{uploadWire(u)})
		return nil
	}
}

// errUnknownPart refuses a form part other than the file part, by name.
func errUnknownPart(name string) error {
	return refusal.Newf(refusal.BadRequest, refusal.CodeParameterInvalid,
		"%q is not a field of an upload: its one part is the file part, named file.", name).With("path", name)
}

// uploadReadFailure maps a failure to read the body: over the body bound is 413 (nothing was
// kept), a sender that stalled 408 (the connection is closed), anything else a broken body.
func uploadReadFailure(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return refusal.Newf(refusal.TooLarge, refusal.CodeContentTooLarge, "The upload exceeds %d bytes; nothing was kept.", uploads.MaxBytes)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return refusal.Newf(refusal.RequestTimeout, refusal.CodeRequestTimeout,
			"The upload stalled or took too long; nothing was kept, and the connection is closed.")
	}
	return errBrokenBody
}

// formPart reads a part's form name and, when it is a file (its disposition carries a filename
// parameter, even an empty one), the filename as sent.
func formPart(p *multipart.Part) (name, filename string, isFile bool) {
	disp, params, err := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
	if err != nil || disp != "form-data" {
		return "", "", false
	}
	filename, isFile = params["filename"]
	return params["name"], filename, isFile
}

// serveUploadBytes answers an upload's bytes (docs/api.md#uploads): proxied from the store chunk
// by chunk, with a strong ETag, If-None-Match, one byte range (If-Range honoured), and the
// whole body for several ranges or a Range this door does not understand.
func (a *API) serveUploadBytes(w http.ResponseWriter, r *http.Request, c *Call, u *uploads.Upload) error {
	etag := `"` + u.SHA256 + `"`
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Cache-Control", "private, no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Accept-Ranges", "bytes")
	if inm := r.Header.Get("If-None-Match"); inm != "" && noneMatchHits(inm, etag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	start, length, partial := int64(0), u.ByteSize, false
	if spec := r.Header.Get("Range"); spec != "" && ifRangeHolds(r.Header.Get("If-Range"), etag) {
		br, verdict := parseByteRange(spec, u.ByteSize)
		switch verdict {
		case rangeUnsatisfiable:
			h.Set("Content-Range", "bytes */"+strconv.FormatInt(u.ByteSize, 10))
			return refusal.Newf(refusal.RangeNotSatisfiable, CodeRangeNotSatisfiable,
				"The range %q lies outside the upload's %d bytes.", spec, u.ByteSize)
		case rangeOne:
			start, length, partial = br.start, br.length, true
		}
	}
	src, err := a.deps.Uploads.Open(r.Context(), u, start, length)
	if err != nil {
		return err
	}
	h.Set("Content-Type", u.ContentType)
	h.Set("Content-Length", strconv.FormatInt(length, 10))
	h.Set("Content-Disposition", "attachment; filename*=UTF-8''"+encodeRFC5987(u.Filename))
	status := http.StatusOK
	if partial {
		status = http.StatusPartialContent
		h.Set("Content-Range", "bytes "+strconv.FormatInt(start, 10)+"-"+strconv.FormatInt(start+length-1, 10)+"/"+strconv.FormatInt(u.ByteSize, 10))
	}
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return nil
	}
	if _, err := io.Copy(w, src); err != nil {
		// The status is out: the only honest answer left is a cut connection, which the client
		// sees as a body shorter than its Content-Length.
		if r.Context().Err() == nil {
			c.Log.Error("streaming an upload failed", "upload", u.PublicID, "error", err)
		}
		panic(http.ErrAbortHandler)
	}
	return nil
}

// CodeRangeNotSatisfiable is the refusal of a byte range outside the file (docs/api.md#uploads).
const CodeRangeNotSatisfiable = "range_not_satisfiable"

// noneMatchHits reports whether an If-None-Match list names etag, by weak comparison (RFC 9110,
// section 13.1.2): W/"x" matches "x", and * matches any.
func noneMatchHits(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

// ifRangeHolds reports whether a Range may be honoured under If-Range (RFC 9110, section 13.1.5):
// no If-Range, or one whose entity tag matches etag strongly. A date never matches: the upload
// serves no Last-Modified.
func ifRangeHolds(header, etag string) bool {
	header = strings.TrimSpace(header)
	return header == "" || header == etag
}

type byteRange struct{ start, length int64 }

type rangeVerdict int

const (
	// rangeWhole: no range applies (several ranges, another unit, a malformed one); serve all.
	rangeWhole rangeVerdict = iota
	// rangeOne: one satisfiable range.
	rangeOne
	// rangeUnsatisfiable: one well-formed range outside the file.
	rangeUnsatisfiable
)

// parseByteRange reads a Range header of one range over size bytes: bytes=a-b, bytes=a- or
// bytes=-n. A last position past the end is cut to the end, a suffix longer than the file is the
// whole file; a first position at or past the end, or a zero suffix, cannot be satisfied. A
// header that names several ranges, another unit, or is malformed (b < a, not digits) is
// ignored, as RFC 9110, section 14.2, allows, and the whole body is served.
func parseByteRange(header string, size int64) (byteRange, rangeVerdict) {
	unit, set, ok := strings.Cut(header, "=")
	if !ok || !strings.EqualFold(strings.TrimSpace(unit), "bytes") || strings.Contains(set, ",") {
		return byteRange{}, rangeWhole
	}
	first, last, ok := strings.Cut(strings.TrimSpace(set), "-")
	if !ok {
		return byteRange{}, rangeWhole
	}
	first, last = strings.TrimSpace(first), strings.TrimSpace(last)
	if first == "" {
		n, ok := parseBytePos(last)
		if !ok {
			return byteRange{}, rangeWhole
		}
		if n == 0 || size == 0 {
			return byteRange{}, rangeUnsatisfiable
		}
		n = min(n, size)
		return byteRange{start: size - n, length: n}, rangeOne
	}
	a, ok := parseBytePos(first)
	if !ok {
		return byteRange{}, rangeWhole
	}
	b := size - 1
	if last != "" {
		if b, ok = parseBytePos(last); !ok || b < a {
			return byteRange{}, rangeWhole
		}
	}
	if a >= size {
		return byteRange{}, rangeUnsatisfiable
	}
	b = min(b, size-1)
	return byteRange{start: a, length: b - a + 1}, rangeOne
}

// parseBytePos reads a non-negative decimal position; digits too many for int64 read as the
// largest position, which is past the end of any upload.
func parseBytePos(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 1<<63 - 1, true
	}
	return n, true
}

// encodeRFC5987 percent-encodes a UTF-8 filename for filename*= (RFC 8187): every byte outside
// attr-char is %XX.
func encodeRFC5987(s string) string {
	const hexdigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$&+-.^_`|~", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexdigits[c>>4])
		b.WriteByte(hexdigits[c&15])
	}
	return b.String()
}
