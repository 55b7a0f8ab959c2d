package modeltest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Reply is one scripted answer: a status line, headers, a blank line and the body. In an SSE
// body, lines starting with "!" are directives: "!pause D" (flush, then wait D), "!cut" (close
// the connection now), "!end-inside TEXT" (write TEXT without a line end and end the response
// there, as a stream cut inside a chunk ends), "!hang" (block until the client goes away,
// recording that it did).
type Reply struct {
	Status int
	Header http.Header
	Body   string
	SSE    bool
}

// ParseReply reads a reply in the case format.
func ParseReply(text string, sse bool) (Reply, error) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	head, body, _ := strings.Cut(text, "\n\n")
	lines := strings.Split(head, "\n")
	parts := strings.SplitN(lines[0], " ", 3)
	if len(parts) < 2 || !strings.HasPrefix(parts[0], "HTTP/") {
		return Reply{}, fmt.Errorf("reply: bad status line %q", lines[0])
	}
	status, err := strconv.Atoi(parts[1])
	if err != nil {
		return Reply{}, fmt.Errorf("reply: bad status %q", parts[1])
	}
	r := Reply{Status: status, Header: http.Header{}, Body: body, SSE: sse}
	for _, l := range lines[1:] {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			return Reply{}, fmt.Errorf("reply: bad header line %q", l)
		}
		r.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	return r, nil
}

// Recorded is one request the fake received.
type Recorded struct {
	Path   string
	Header http.Header
	Body   []byte
}

// Fake is a provider server that answers its replies in request order.
type Fake struct {
	*httptest.Server
	mu       sync.Mutex
	replies  []Reply
	requests []Recorded
	// HangClosed is closed when a !hang reply saw the client go away.
	HangClosed chan struct{}
	// HangStarted is closed when a !hang reply began waiting.
	HangStarted chan struct{}
	hangOnce    sync.Once
	startOnce   sync.Once
	// Check, when set, is run on every request body; a non-empty answer makes the fake answer
	// 400 with it (a server that refuses what the real one would).
	Check func(body []byte) string
}

// NewFake starts a fake answering replies in order; more requests than replies answer 500 and
// fail the test.
func NewFake(t testing.TB, replies ...Reply) *Fake {
	f := &Fake{replies: replies, HangClosed: make(chan struct{}), HangStarted: make(chan struct{})}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		n := len(f.requests)
		f.requests = append(f.requests, Recorded{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		var rep *Reply
		if n < len(f.replies) {
			rep = &f.replies[n]
		}
		check := f.Check
		f.mu.Unlock()
		if rep == nil {
			t.Errorf("fake provider: request %d has no reply", n+1)
			http.Error(w, "no reply", http.StatusInternalServerError)
			return
		}
		if check != nil {
			if why := check(body); why != "" {
				w.Header().Set("content-type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error"}}`, why)
				return
			}
		}
		f.serve(w, r, *rep)
	}))
	t.Cleanup(f.Close)
	return f
}

// Append adds replies to the script.
func (f *Fake) Append(replies ...Reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replies = append(f.replies, replies...)
}

// Requests are the requests received so far.
func (f *Fake) Requests() []Recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Recorded(nil), f.requests...)
}

// Pending is how many replies were not asked for.
func (f *Fake) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.replies) - len(f.requests)
}

func (f *Fake) serve(w http.ResponseWriter, r *http.Request, rep Reply) {
	for k, vs := range rep.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if !rep.SSE {
		w.WriteHeader(rep.Status)
		_, _ = io.WriteString(w, rep.Body)
		return
	}
	w.WriteHeader(rep.Status)
	fl, _ := w.(http.Flusher)
	sc := bufio.NewScanner(strings.NewReader(rep.Body))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "!pause "):
			if fl != nil {
				fl.Flush()
			}
			d, _ := time.ParseDuration(strings.TrimSpace(strings.TrimPrefix(line, "!pause ")))
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
		case strings.HasPrefix(line, "!end-inside "):
			_, _ = io.WriteString(w, strings.TrimPrefix(line, "!end-inside "))
			return
		case line == "!cut":
			if fl != nil {
				fl.Flush()
			}
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					_ = conn.Close()
				}
			}
			return
		case line == "!hang":
			if fl != nil {
				fl.Flush()
			}
			f.startOnce.Do(func() { close(f.HangStarted) })
			<-r.Context().Done()
			f.hangOnce.Do(func() { close(f.HangClosed) })
			return
		default:
			var b bytes.Buffer
			b.WriteString(line)
			b.WriteByte('\n')
			_, _ = w.Write(b.Bytes())
			if fl != nil {
				fl.Flush()
			}
		}
	}
}
