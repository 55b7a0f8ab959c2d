package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const descriptor = `{"upload":{"public_id":"6f1b2c3d-0000-4000-8000-00000000aa01","uri":"nexus://uploads/6f1b2c3d-0000-4000-8000-00000000aa01",
"filename":"page.png","content_type":"image/png","byte_size":3,"sha256":"abc","creator":{"kind":"runner","public_id":"1d2e"},
"bound":false,"created_at":"2025-03-01T09:30:00.500Z","expires_at":"2025-03-02T09:30:00.500Z"}}`

// TestPostFile pins what an upload sends: the route, the token, and a multipart body whose one
// part is the file named file with the bytes as given.
func TestPostFile(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		call func(c *Client, body io.Reader) (*UploadResponse, error)
		path string
	}{
		{"member upload", func(c *Client, b io.Reader) (*UploadResponse, error) {
			return c.CreateUpload(context.Background(), `dir/"page".png`, b)
		}, "/agent_api/v1/uploads"},
		{"capture", func(c *Client, b io.Reader) (*UploadResponse, error) {
			return c.StageCapture(context.Background(), `dir/"page".png`, b)
		}, "/agent_api/v1/executor/uploads"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			data := bytes.Repeat([]byte("xyz"), 100_000)
			var gotPath, gotAuth, gotName, gotFile string
			var gotData []byte
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotPath, gotAuth = r.URL.Path, r.Header.Get("Authorization")
				_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
				if err != nil {
					t.Errorf("content type: %v", err)
				}
				mr := multipart.NewReader(r.Body, params["boundary"])
				p, err := mr.NextPart()
				if err != nil {
					t.Errorf("part: %v", err)
					return
				}
				gotName, gotFile = p.FormName(), p.FileName()
				gotData, _ = io.ReadAll(p)
				if _, err := mr.NextPart(); err != io.EOF {
					t.Errorf("a second part: %v", err)
				}
				w.WriteHeader(201)
				_, _ = io.WriteString(w, descriptor)
			}))
			defer srv.Close()
			res, err := c.call(New(srv.URL, "nxe_tok"), bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if gotPath != c.path || gotAuth != "Bearer nxe_tok" || gotName != "file" || gotFile != `"page".png` || !bytes.Equal(gotData, data) {
				t.Fatalf("sent %s %q part %q file %q, %d bytes", gotPath, gotAuth, gotName, gotFile, len(gotData))
			}
			created := time.Date(2025, 3, 1, 9, 30, 0, 500_000_000, time.UTC)
			expires := created.Add(24 * time.Hour)
			want := Upload{PublicID: "6f1b2c3d-0000-4000-8000-00000000aa01", Filename: "page.png", ContentType: "image/png", ByteSize: 3, SHA256: "abc",
				Creator: UploadCreator{Kind: "runner", PublicID: "1d2e"}, CreatedAt: created, ExpiresAt: &expires,
				uri: "nexus://uploads/6f1b2c3d-0000-4000-8000-00000000aa01"}
			if diff := cmp.Diff(want, res.Upload, cmp.AllowUnexported(Upload{})); diff != "" {
				t.Fatalf("upload (-want +got):\n%s", diff)
			}
			if res.URI() != "nexus://uploads/6f1b2c3d-0000-4000-8000-00000000aa01" || len(res.Raw) == 0 {
				t.Fatalf("URI %q", res.URI())
			}
		})
	}
}

// failing reader: the upload fails on the client side and no request completes.
type brokenReader struct{}

func (brokenReader) Read([]byte) (int, error) { return 0, errors.New("disk gone") }

func TestPostFileRefusalsAndBrokenSources(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(413)
		_, _ = io.WriteString(w, `{"error":{"code":"content_too_large","message":"too big"}}`)
	}))
	defer srv.Close()
	c := New(srv.URL, "nxm_tok")
	_, err := c.CreateUpload(context.Background(), "f", strings.NewReader("x"))
	var e *Error
	if !errors.As(err, &e) || e.Status != 413 || e.Code != "content_too_large" {
		t.Fatalf("refusal: %v", err)
	}
	if _, err := c.CreateUpload(context.Background(), "f", brokenReader{}); err == nil {
		t.Fatal("a broken source uploaded")
	}
}

func TestBytes(t *testing.T) {
	t.Parallel()
	var seen http.Header
	var path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, path = r.Header.Clone(), r.URL.Path
		switch r.Header.Get("Range") {
		case "bytes=0-1":
			w.Header().Set("Content-Range", "bytes 0-1/3")
			w.Header().Set("ETag", `"abc"`)
			w.Header().Set("Content-Type", "image/png")
			w.WriteHeader(206)
			_, _ = io.WriteString(w, "ab")
		case "bytes=9-":
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(416)
			_, _ = io.WriteString(w, `{"error":{"code":"range_not_satisfiable","message":"no"}}`)
		default:
			w.Header().Set("ETag", `"abc"`)
			w.WriteHeader(304)
		}
	}))
	defer srv.Close()
	c := New(srv.URL, "nxe_tok")
	ctx := context.Background()

	res, err := c.CaptureBytes(ctx, "6f1b", &BytesRequest{Range: "bytes=0-1", IfRange: `"abc"`})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if path != "/agent_api/v1/executor/uploads/6f1b/bytes" || seen.Get("If-Range") != `"abc"` || seen.Get("Authorization") != "Bearer nxe_tok" {
		t.Fatalf("sent %s %v", path, seen)
	}
	if res.Status != 206 || string(body) != "ab" || res.ContentRange != "bytes 0-1/3" || res.ETag != `"abc"` || res.ContentType != "image/png" || res.ContentLength != 2 {
		t.Fatalf("206 answer %+v %q", res, body)
	}

	res, err = c.UploadBytes(ctx, "6f1b", &BytesRequest{IfNoneMatch: `"abc"`})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if path != "/agent_api/v1/uploads/6f1b/bytes" || seen.Get("If-None-Match") != `"abc"` || !res.NotModified || res.Status != 304 {
		t.Fatalf("304 answer %+v (sent %s %v)", res, path, seen)
	}

	_, err = c.UploadBytes(ctx, "6f1b", &BytesRequest{Range: "bytes=9-"})
	var e *Error
	if !errors.As(err, &e) || e.Status != 416 || e.Code != "range_not_satisfiable" {
		t.Fatalf("416: %v", err)
	}
}

func TestDescriptorReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name string
		call func(c *Client) (*UploadResponse, error)
		path string
	}{
		{"upload", func(c *Client) (*UploadResponse, error) { return c.Upload(ctx, "a/b") }, "/agent_api/v1/uploads/a%2Fb"},
		{"capture", func(c *Client) (*UploadResponse, error) { return c.Capture(ctx, "6f1b") }, "/agent_api/v1/executor/uploads/6f1b"},
	} {
		cl, seen := fakeServer(t, 200, descriptor)
		res, err := c.call(cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(*seen) != 1 || (*seen)[0].Method != "GET" || (*seen)[0].Path != c.path {
			t.Fatalf("%s sent %+v", c.name, *seen)
		}
		if res.Upload.PublicID != "6f1b2c3d-0000-4000-8000-00000000aa01" || res.Upload.Filename != "page.png" {
			t.Fatalf("%s read %+v", c.name, res.Upload)
		}
	}
	// A descriptor without its uri still names the one scheme.
	if u := (Upload{PublicID: "x"}); u.URI() != "nexus://uploads/x" {
		t.Fatalf("URI %q", u.URI())
	}
}

func TestEventStream(t *testing.T) {
	t.Parallel()
	const stream = "retry: 3000\n\n: connected 1d2e\n\n" +
		"id: 1\nevent: work_available\ndata: {\"type\":\"work_available\",\"kind\":\"tool_call\",\"run_public_id\":\"3f0e\",\"task_key\":\"r2t0\",\"tool_name\":\"screenshot\"}\n\n" +
		": ping\n\n" +
		"id: 2\r\nevent: work_canceled\r\ndata: {\"type\":\"work_canceled\",\"run_public_id\":\"3f0e\",\"task_key\":\"r2t0\",\"reason\":\"expired\"}\r\n\r\n" +
		"id: 3\nevent: later_kind\ndata: {\"a\":\ndata: 1}\n\n"
	var accept string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accept = r.Header.Get("Accept")
		if r.URL.Path != "/agent_api/v1/executor/events" {
			w.WriteHeader(404)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, stream)
	}))
	defer srv.Close()
	s, err := New(srv.URL, "nxe_tok").Events(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []Event
	for {
		ev, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, *ev)
	}
	want := []Event{
		{ID: "1", Type: "work_available", Kind: "tool_call", RunPublicID: "3f0e", TaskKey: "r2t0", ToolName: "screenshot",
			Data: []byte(`{"type":"work_available","kind":"tool_call","run_public_id":"3f0e","task_key":"r2t0","tool_name":"screenshot"}`)},
		{ID: "2", Type: "work_canceled", RunPublicID: "3f0e", TaskKey: "r2t0", Reason: "expired",
			Data: []byte(`{"type":"work_canceled","run_public_id":"3f0e","task_key":"r2t0","reason":"expired"}`)},
		{ID: "3", Type: "later_kind", Data: []byte("{\"a\":\n1}")},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	if s.Retry != 3*time.Second || accept != "text/event-stream" {
		t.Fatalf("retry %v, accept %q", s.Retry, accept)
	}
}

func TestEventStreamRateLimited(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(429)
		_, _ = io.WriteString(w, `{"error":{"code":"rate_limited","message":"at most 8"}}`)
	}))
	defer srv.Close()
	_, err := New(srv.URL, "nxe_tok").Events(context.Background())
	var e *Error
	if !errors.As(err, &e) || e.Status != 429 || e.Code != "rate_limited" || e.RetryAfter != 3*time.Second {
		t.Fatalf("ninth stream: %#v", err)
	}
	// The JSON calls read Retry-After too.
	_, err = New(srv.URL, "nxe_tok").ExecutorIdentity(context.Background())
	if !errors.As(err, &e) || e.RetryAfter != 3*time.Second {
		t.Fatalf("a 429 on a JSON call: %#v", err)
	}
}
