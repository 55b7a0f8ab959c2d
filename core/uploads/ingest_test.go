package uploads

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

func TestIngestDescriptor(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newWorld(t, s)
		png := append([]byte("\x89PNG\r\n\x1a\n"), pattern(100)...)
		u := w.ingest(t, ExecutorCreator(w.r1), "shots/page.png", png)
		want := &Upload{
			ID: u.ID, PublicID: u.PublicID, Filename: "page.png", ContentType: "image/png", ByteSize: int64(len(png)),
			SHA256: hexSum(png), Creator: Creator{Kind: CreatorRunner, ID: w.r1.ID, PublicID: w.r1.PublicID},
			CreatedAt: store.Millis(w.clock()),
		}
		if diff := cmp.Diff(want, u); diff != "" {
			t.Fatalf("upload (-want +got):\n%s", diff)
		}
		if u.URI() != "nexus://uploads/"+u.PublicID || strings.ToLower(u.PublicID) != u.PublicID {
			t.Fatalf("uri %q, public id %q", u.URI(), u.PublicID)
		}
		if at, ok := u.ExpiresAt(); !ok || at != u.CreatedAt+24*3600*1000 {
			t.Fatalf("expires_at = %d, %v; want created_at + 24 h", at, ok)
		}
		if !u.IsMedia() || u.MediaType() != "image/png" {
			t.Fatalf("media = %v %q", u.IsMedia(), u.MediaType())
		}
		// Read back exactly as stored.
		got, err := w.svc.ForExecutor(context.Background(), w.r1, u.PublicID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(u, got); diff != "" {
			t.Fatalf("read back (-ingested +read):\n%s", diff)
		}
		if b := w.readAll(t, got, 0, got.ByteSize); !bytes.Equal(b, png) {
			t.Fatal("bytes differ")
		}
		// A tool provider's capture names its kind; a member's upload its member kind.
		if u := w.ingest(t, ExecutorCreator(w.p1), "x", []byte("x")); u.Creator.Kind != CreatorToolProvider {
			t.Fatalf("tool provider capture kind %q", u.Creator.Kind)
		}
		if u := w.ingest(t, MemberCreator(w.bot), "x", []byte("x")); u.Creator.Kind != CreatorAgent || u.Creator.PublicID != w.bot.PublicID {
			t.Fatalf("agent upload creator %+v", u.Creator)
		}
		if u := w.ingest(t, MemberCreator(w.alice), "x", []byte("x")); u.Creator.Kind != CreatorUser || u.Creator.PublicID != w.alice.PublicID {
			t.Fatalf("user upload creator %+v", u.Creator)
		}
	})
}

// TestDetectedType pins that the type is sniffed from the bytes (the first 512), whatever the
// name says, with parameters kept.
func TestDetectedType(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newWorld(t, s)
		cases := []struct {
			name, file string
			data       []byte
			want       string
			media      bool
		}{
			{"png", "a.txt", []byte("\x89PNG\r\n\x1a\n\x00\x00"), "image/png", true},
			{"jpeg", "a.png", []byte("\xFF\xD8\xFF\xE0\x00\x10JFIF"), "image/jpeg", true},
			{"gif", "a", []byte("GIF89a\x01\x00"), "image/gif", true},
			{"webp", "a", []byte("RIFF\x10\x00\x00\x00WEBPVP8 "), "image/webp", true},
			{"pdf", "a.png", []byte("%PDF-1.7\n%\xE2\xE3"), "application/pdf", true},
			{"text", "page.png", []byte("just words\n"), "text/plain; charset=utf-8", false},
			{"html", "a", []byte("<!DOCTYPE html><p>x"), "text/html; charset=utf-8", false},
			{"binary", "a", []byte{0, 1, 2, 3}, "application/octet-stream", false},
			{"empty", "a", nil, "text/plain; charset=utf-8", false},
			// Only the head counts: a PNG signature past byte 512 is not a PNG.
			{"late signature", "a", append(bytes.Repeat([]byte("a"), 600), "\x89PNG\r\n\x1a\n"...), "text/plain; charset=utf-8", false},
		}
		for _, c := range cases {
			u := w.ingest(t, MemberCreator(w.alice), c.file, c.data)
			if u.ContentType != c.want || u.IsMedia() != c.media {
				t.Errorf("%s: content_type %q media %v, want %q %v", c.name, u.ContentType, u.IsMedia(), c.want, c.media)
			}
			if u.ByteSize != int64(len(c.data)) || u.SHA256 != hexSum(c.data) {
				t.Errorf("%s: size %d sha %s", c.name, u.ByteSize, u.SHA256)
			}
		}
	})
}

// TestIngestChunking stores files across chunk boundaries and reads them back whole, as the
// right number of chunk rows.
func TestIngestChunking(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newWorld(t, s)
		for _, n := range []int{0, 1, ChunkSize - 1, ChunkSize, ChunkSize + 1, 2*ChunkSize + ChunkSize/2, 3 * ChunkSize} {
			data := pattern(n)
			u := w.ingest(t, MemberCreator(w.alice), "f", data)
			if u.ByteSize != int64(n) || u.SHA256 != hexSum(data) {
				t.Fatalf("%d bytes: size %d sha %s", n, u.ByteSize, u.SHA256)
			}
			chunks, err := store.UploadChunkCount(context.Background(), s.Reader(), u.ID)
			if err != nil {
				t.Fatal(err)
			}
			if want := int64((n + ChunkSize - 1) / ChunkSize); chunks != want {
				t.Fatalf("%d bytes: %d chunks, want %d", n, chunks, want)
			}
			if got := w.readAll(t, u, 0, u.ByteSize); !bytes.Equal(got, data) {
				t.Fatalf("%d bytes: read back differs", n)
			}
		}
	})
}

func TestOpenRanges(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newWorld(t, s)
		data := pattern(2*ChunkSize + 100)
		u := w.ingest(t, MemberCreator(w.alice), "f", data)
		for _, r := range [][2]int64{
			{0, 0}, {0, 1}, {0, 100}, {ChunkSize - 3, 6}, {ChunkSize, ChunkSize}, {ChunkSize - 1, ChunkSize + 2},
			{2 * ChunkSize, 100}, {2*ChunkSize + 99, 1}, {5, 2*ChunkSize + 95}, {int64(len(data)), 0},
		} {
			if got := w.readAll(t, u, r[0], r[1]); !bytes.Equal(got, data[r[0]:r[0]+r[1]]) {
				t.Errorf("range %d+%d differs", r[0], r[1])
			}
		}
		for _, r := range [][2]int64{{-1, 1}, {0, int64(len(data)) + 1}, {int64(len(data)), 1}, {1, -1}} {
			if _, err := w.svc.Open(context.Background(), u, r[0], r[1]); err == nil {
				t.Errorf("range %d+%d outside the file opened", r[0], r[1])
			}
		}
	})
}

// TestMediaOpen: a provider reads a complete upload's whole bytes by its public id, in either
// case; an id that names no upload is an error.
func TestMediaOpen(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newWorld(t, s)
		data := pattern(ChunkSize + 7)
		u := w.ingest(t, MemberCreator(w.alice), "f", data)
		media := w.svc.Media(s.Reader())
		for _, id := range []string{u.PublicID, strings.ToUpper(u.PublicID)} {
			r, err := media.Open(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			if err != nil || !bytes.Equal(got, data) || r.Close() != nil {
				t.Fatalf("%s: read %d bytes, %v", id, len(got), err)
			}
		}
		if _, err := media.Open(context.Background(), store.NewPublicID()); err == nil {
			t.Fatal("an unknown upload opened")
		}
	})
}

// failingReader yields data and then fails, as a connection that drops mid-upload.
type failingReader struct {
	r   io.Reader
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, f.err
	}
	return n, err
}

func TestInterruptedUploadKeepsNothing(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newWorld(t, s)
		// A source that breaks off, or ends without its framing (a multipart part cut before its
		// closing boundary reads io.ErrUnexpectedEOF), is a failure, never a short file.
		for _, drop := range []error{errors.New("connection reset"), io.ErrUnexpectedEOF} {
			for _, n := range []int{0, 10, ChunkSize, ChunkSize + ChunkSize/2, 3 * ChunkSize} {
				_, err := w.svc.Ingest(context.Background(), MemberCreator(w.alice), "f", &failingReader{bytes.NewReader(pattern(n)), drop})
				var re *ReadError
				if !errors.As(err, &re) || !errors.Is(err, drop) {
					t.Fatalf("%d bytes then %v: err %v, want a ReadError wrapping it", n, drop, err)
				}
				if u, c := counts(t, s); u != 0 || c != 0 {
					t.Fatalf("%d bytes then %v: %d uploads and %d chunks kept", n, drop, u, c)
				}
			}
		}
		// A request canceled while its bytes are being stored is the client's doing too.
		ctx, cancel := context.WithCancel(context.Background())
		pr, pw := io.Pipe()
		go func() {
			_, _ = pw.Write(pattern(ChunkSize + 10))
			cancel()
			_ = pw.CloseWithError(context.Canceled)
		}()
		_, err := w.svc.Ingest(ctx, MemberCreator(w.alice), "f", pr)
		var re *ReadError
		if !errors.As(err, &re) {
			t.Fatalf("canceled upload: err %v, want a ReadError", err)
		}
		if u, c := counts(t, s); u != 0 || c != 0 {
			t.Fatalf("canceled upload: %d uploads and %d chunks kept", u, c)
		}
	})
}

// TestIncompleteUploadIsInvisible holds an upload open after its first chunks are stored: its
// row exists but nothing can read, own or bind it; when the connection drops it is gone.
func TestIncompleteUploadIsInvisible(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newWorld(t, s)
		ctx := context.Background()
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		go func() {
			_, err := w.svc.Ingest(ctx, ExecutorCreator(w.r1), "big", pr)
			done <- err
		}()
		if _, err := pw.Write(pattern(2*ChunkSize + 1)); err != nil {
			t.Fatal(err)
		}
		// Wait for the second chunk's transaction: the row and two chunks are in.
		deadline := time.Now().Add(10 * time.Second)
		var publicID string
		for {
			_, c := counts(t, s)
			if c >= 2 {
				if err := s.Reader().Get(ctx, &publicID, `SELECT public_id FROM uploads`); err != nil {
					t.Fatal(err)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the first chunks never reached the store")
			}
			time.Sleep(5 * time.Millisecond)
		}
		if _, err := w.svc.ForExecutor(ctx, w.r1, publicID); !isCode(err, "not_found") {
			t.Fatalf("reading an incomplete capture: %v, want not_found", err)
		}
		if m, err := w.svc.Lookup(ctx, s.Reader(), []string{publicID}); err != nil || len(m) != 0 {
			t.Fatalf("lookup of an incomplete upload: %v %v", m, err)
		}
		err := s.Write(ctx, func(tx *store.Tx) error {
			own, err := OwnedCaptures(ctx, tx, w.r1.ID, []string{publicID})
			if err != nil || len(own) != 0 {
				t.Errorf("an incomplete capture is owned: %v %v", own, err)
			}
			return Bind(ctx, tx, Target{Kind: TargetTaskResult, ID: 1, WorkspaceID: w.w1}, []string{publicID}, w.clock())
		})
		if !errors.Is(err, ErrUnbindable) {
			t.Fatalf("binding an incomplete upload: %v, want ErrUnbindable", err)
		}
		_ = pw.CloseWithError(errors.New("client went away"))
		if err := <-done; !errors.As(err, new(*ReadError)) {
			t.Fatalf("ingest ended with %v", err)
		}
		if u, c := counts(t, s); u != 0 || c != 0 {
			t.Fatalf("%d uploads and %d chunks kept", u, c)
		}
	})
}

func TestUnknownCreatorKind(t *testing.T) {
	t.Parallel()
	w := newWorld(t, storetest.Open(t, store.SQLite))
	if _, err := w.svc.Ingest(context.Background(), Creator{Kind: "kernel", ID: 1, PublicID: "x"}, "f", strings.NewReader("x")); err == nil {
		t.Fatal("an unknown creator kind was accepted")
	}
	if u, c := counts(t, w.store); u != 0 || c != 0 {
		t.Fatalf("%d uploads and %d chunks kept", u, c)
	}
}

func TestNewNeedsASniffer(t *testing.T) {
	t.Parallel()
	if _, err := New(storetest.Open(t, store.SQLite), Options{}); err == nil {
		t.Fatal("New without DetectContentType succeeded")
	}
}

func isCode(err error, code string) bool {
	r, ok := refusal.As(err)
	return ok && r.Code == code
}

func TestCleanFilename(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 254) + "é" // 256 bytes: the é straddles the bound
	cases := []struct{ in, want string }{
		{"page.png", "page.png"},
		{"/home/me/shots/page.png", "page.png"},
		{`C:\Users\me\page.png`, "page.png"},
		{`a/b\c.txt`, "c.txt"},
		{"dir/", "upload"},
		{"", "upload"},
		{".", "upload"},
		{"..", "upload"},
		{"../../etc/passwd", "passwd"},
		{"tab\there\x00\x1f\x7f.txt", "tabhere.txt"},
		{"bell\u0085next", "bellnext"},
		{"\x00\x01", "upload"},
		{"caf\xe9.txt", "caf.txt"},
		{"naïve résumé.pdf", "naïve résumé.pdf"},
		{"  spaced  ", "  spaced  "},
		{long, strings.Repeat("a", 254)},
		{strings.Repeat("b", 300), strings.Repeat("b", 255)},
		// Bidirectional controls go, every one of them; the emoji joiner stays.
		{"invoice\u202Etxt.exe", "invoicetxt.exe"},
		{"\u202A\u202B\u202C\u202D\u202Ea\u2066\u2067\u2068\u2069b\u200E\u200F\u061Cc", "abc"},
		{"\u202E", "upload"},
		{"family \U0001F468\u200D\U0001F469\u200D\U0001F467.png", "family \U0001F468\u200D\U0001F469\u200D\U0001F467.png"},
	}
	for _, c := range cases {
		if got := CleanFilename(c.in); got != c.want {
			t.Errorf("CleanFilename(%q) = %q, want %q", c.in, got, c.want)
		}
		if len(CleanFilename(c.in)) > MaxFilenameBytes {
			t.Errorf("CleanFilename(%q) is over the bound", c.in)
		}
	}
}
