package httpapi

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
)

// catalog holds the kernel tool catalog route's bytes, computed once: the body, its gzip form and
// the strong ETag over the body (docs/api.md#health-and-the-catalog). Both encodings carry the same
// ETag, the digest of the JSON itself, so a client's If-None-Match works whichever it received;
// responses vary on Accept-Encoding for caches.
type catalog struct {
	body   []byte
	gzip   []byte
	etag   string
	length string
	glen   string
}

func newCatalog(body []byte) (*catalog, error) {
	if len(body) == 0 {
		return nil, errors.New("httpapi: empty catalog body")
	}
	sum := sha256.Sum256(body)
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if _, err := zw.Write(body); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return &catalog{
		body:   body,
		gzip:   gz.Bytes(),
		etag:   `"` + hex.EncodeToString(sum[:]) + `"`,
		length: strconv.Itoa(len(body)),
		glen:   strconv.Itoa(gz.Len()),
	}, nil
}

// tools serves GET /agent_api/v1/tools. Authentication has already happened (the conditional
// request is answered only to a member).
func (a *API) tools(w http.ResponseWriter, r *http.Request, _ *Call) error {
	cat := a.catalog
	h := w.Header()
	h.Set("ETag", cat.etag)
	h.Set("Cache-Control", "no-cache")
	h.Set("Vary", "Accept-Encoding")
	if etagMatches(r.Header.Values("If-None-Match"), cat.etag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	h.Set("Content-Type", contentTypeJSON)
	body, length := cat.body, cat.length
	if acceptsGzip(r.Header.Values("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		body, length = cat.gzip, cat.glen
	}
	h.Set("Content-Length", length)
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
	return nil
}

// etagMatches applies If-None-Match with the weak comparison of RFC 9110, section 13.1.2: `*`
// matches, and W/"x" matches "x".
func etagMatches(headers []string, etag string) bool {
	for _, h := range headers {
		for _, tag := range strings.Split(h, ",") {
			tag = strings.TrimSpace(tag)
			if tag == "*" || strings.TrimPrefix(tag, "W/") == etag {
				return true
			}
		}
	}
	return false
}

// acceptsGzip reports whether Accept-Encoding admits gzip with a non-zero quality, either by name
// (gzip, x-gzip) or through `*`.
func acceptsGzip(headers []string) bool {
	named, star := -1.0, -1.0
	for _, h := range headers {
		for _, part := range strings.Split(h, ",") {
			coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			q := 1.0
			for _, p := range strings.Split(params, ";") {
				k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
				if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
					if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
						q = f
					}
				}
			}
			switch strings.ToLower(strings.TrimSpace(coding)) {
			case "gzip", "x-gzip":
				named = q
			case "*":
				star = q
			}
		}
	}
	if named >= 0 {
		return named > 0
	}
	return star > 0
}
