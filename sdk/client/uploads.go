package client

import (
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// UploadURIPrefix is the one URI scheme the kernel resolves: a resource_link's uri is this
// prefix and the upload's public id.
const UploadURIPrefix = "nexus://uploads/"

// Upload is an upload's descriptor: a member's upload or an executor's capture.
type Upload struct {
	PublicID string `json:"public_id"`
	Filename string `json:"filename"`
	// ContentType is the type the server detected from the bytes, parameters included.
	ContentType string        `json:"content_type"`
	ByteSize    int64         `json:"byte_size"`
	SHA256      string        `json:"sha256"`
	Creator     UploadCreator `json:"creator"`
	// Bound reports whether a result or an input binds the upload; an unbound one expires.
	Bound     bool       `json:"bound"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`

	uri string
}

// UploadCreator is who staged an upload: kind user, agent, runner or tool_provider.
type UploadCreator struct {
	Kind     string `json:"kind"`
	PublicID string `json:"public_id"`
}

// URI is the upload's nexus://uploads/<public_id>, what a resource_link names.
func (u *Upload) URI() string {
	if u.uri != "" {
		return u.uri
	}
	return UploadURIPrefix + u.PublicID
}

// UnmarshalJSON reads a descriptor, keeping its uri for URI.
func (u *Upload) UnmarshalJSON(b []byte) error {
	type plain Upload
	var v struct {
		plain
		URI string `json:"uri"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*u = Upload(v.plain)
	u.uri = v.URI
	return nil
}

// UploadResponse carries one upload.
type UploadResponse struct {
	// Raw is the response body as served.
	Raw    json.RawMessage `json:"-"`
	Upload Upload          `json:"upload"`
}

// URI is the upload's nexus://uploads/<public_id>.
func (r *UploadResponse) URI() string { return r.Upload.URI() }

// CreateUpload streams body to the server as the member's upload named filename
// (POST /agent_api/v1/uploads), for use as an input attachment. The server keeps at most
// 100 MiB and detects the type itself.
func (c *Client) CreateUpload(ctx context.Context, filename string, body io.Reader) (*UploadResponse, error) {
	return c.postFile(ctx, "/agent_api/v1/uploads", filename, body)
}

// Upload reads the descriptor of an upload the member may read.
func (c *Client) Upload(ctx context.Context, publicID string) (*UploadResponse, error) {
	out := &UploadResponse{}
	return out, c.call(ctx, http.MethodGet, "/agent_api/v1/uploads/"+url.PathEscape(publicID), nil, out, &out.Raw)
}

// UploadBytes reads an upload's bytes (GET /agent_api/v1/uploads/{id}/bytes). The caller closes
// the response's Body.
func (c *Client) UploadBytes(ctx context.Context, publicID string, req *BytesRequest) (*BytesResponse, error) {
	return c.bytes(ctx, "/agent_api/v1/uploads/"+url.PathEscape(publicID)+"/bytes", req)
}

// StageCapture streams body to the server as the executor's capture named filename
// (POST /agent_api/v1/executor/uploads); a commit binds it by linking URI().
func (c *Client) StageCapture(ctx context.Context, filename string, body io.Reader) (*UploadResponse, error) {
	return c.postFile(ctx, "/agent_api/v1/executor/uploads", filename, body)
}

// Capture reads the descriptor of one of the executor's own captures.
func (c *Client) Capture(ctx context.Context, publicID string) (*UploadResponse, error) {
	out := &UploadResponse{}
	return out, c.call(ctx, http.MethodGet, "/agent_api/v1/executor/uploads/"+url.PathEscape(publicID), nil, out, &out.Raw)
}

// CaptureBytes reads the bytes of one of the executor's own captures. The caller closes the
// response's Body.
func (c *Client) CaptureBytes(ctx context.Context, publicID string, req *BytesRequest) (*BytesResponse, error) {
	return c.bytes(ctx, "/agent_api/v1/executor/uploads/"+url.PathEscape(publicID)+"/bytes", req)
}

// BytesRequest conditions a bytes read; empty fields send nothing.
type BytesRequest struct {
	// Range is a Range header, for example "bytes=0-99", "bytes=100-" or "bytes=-100".
	Range string
	// IfNoneMatch is an ETag the caller holds; a match answers NotModified without a body.
	IfNoneMatch string
	// IfRange is the ETag a Range applies to; another answers the whole body.
	IfRange string
}

// BytesResponse is a bytes read: 200 (whole), 206 (a range) or 304 (NotModified).
type BytesResponse struct {
	Status int
	// Body is the bytes; empty when NotModified. The caller closes it.
	Body io.ReadCloser
	// NotModified is set on 304.
	NotModified bool
	// ContentType is the upload's detected type.
	ContentType string
	// ContentLength is the length of Body (-1 when the server did not say).
	ContentLength int64
	// ETag is the strong entity tag, the quoted SHA-256 of the whole upload.
	ETag string
	// ContentRange is set on 206: "bytes a-b/size".
	ContentRange string
	// Header is every header of the answer.
	Header http.Header
}

func (c *Client) bytes(ctx context.Context, path string, req *BytesRequest) (*BytesResponse, error) {
	hdr := http.Header{}
	if req != nil {
		for k, v := range map[string]string{"Range": req.Range, "If-None-Match": req.IfNoneMatch, "If-Range": req.IfRange} {
			if v != "" {
				hdr.Set(k, v)
			}
		}
	}
	resp, err := c.open(ctx, http.MethodGet, path, nil, hdr)
	if err != nil {
		return nil, err
	}
	return &BytesResponse{
		Status: resp.StatusCode, Body: resp.Body, NotModified: resp.StatusCode == http.StatusNotModified,
		ContentType: resp.Header.Get("Content-Type"), ContentLength: resp.ContentLength, ETag: resp.Header.Get("ETag"),
		ContentRange: resp.Header.Get("Content-Range"), Header: resp.Header,
	}, nil
}

// postFile streams body as the one file part of a multipart body, without holding it.
func (c *Client) postFile(ctx context.Context, path, filename string, body io.Reader) (*UploadResponse, error) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		part, err := mw.CreateFormFile("file", filename)
		if err == nil {
			_, err = io.Copy(part, body)
		}
		if err == nil {
			err = mw.Close()
		}
		_ = pw.CloseWithError(err)
	}()
	hdr := http.Header{"Content-Type": {mw.FormDataContentType()}}
	resp, err := c.open(ctx, http.MethodPost, path, pr, hdr)
	// The writer goroutine ends once the transport stops reading the pipe.
	_ = pr.CloseWithError(io.ErrClosedPipe)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	out := &UploadResponse{Raw: raw}
	return out, json.Unmarshal(raw, out)
}

// open sends a request whose body (if any) streams and returns the response with its body
// unread when it is 2xx or 304; any other answer is read and returned as *Error.
func (c *Client) open(ctx context.Context, method, path string, body io.Reader, hdr http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 && resp.StatusCode != http.StatusNotModified {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		e := decodeError(resp.StatusCode, raw)
		if ce, ok := e.(*Error); ok {
			ce.RetryAfter = retryAfter(resp.Header.Get("Retry-After"))
		}
		return nil, e
	}
	return resp, nil
}

// retryAfter reads a Retry-After of whole seconds; anything else is zero.
func retryAfter(v string) time.Duration {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}
