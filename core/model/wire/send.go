package wire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/nexuskernel/nexus/core/model"
)

// errIdle is the cause of an attempt the idle watch ended.
var errIdle = errors.New("idle")

// Attempt is one HTTP attempt of a model call.
type Attempt struct {
	Client *http.Client
	URL    string
	Header http.Header
	Body   []byte
	// Idle is the longest silence allowed while waiting for headers and body; 0 disables it.
	Idle time.Duration
}

// Sent is an attempt's response, its body under the idle watch. Close it when done.
type Sent struct {
	*http.Response
	watch  *watch
	cancel context.CancelCauseFunc
}

// Close closes the body and stops the watch.
func (s *Sent) Close() {
	if s.Body != nil {
		_ = s.Body.Close()
	}
	s.watch.stop()
	s.cancel(nil)
}

// Send performs the attempt. A transport failure comes back classified (Transport); a cancelled
// ctx comes back as ctx.Err().
func Send(ctx context.Context, a Attempt) (*Sent, error) {
	actx, cancel := context.WithCancelCause(ctx)
	w := newWatch(a.Idle, func() { cancel(errIdle) })
	req, err := http.NewRequestWithContext(actx, http.MethodPost, a.URL, bytes.NewReader(a.Body))
	if err != nil {
		w.stop()
		cancel(nil)
		return nil, &model.Error{Key: model.KeyProviderError, Detail: "request: " + err.Error()}
	}
	req.Header = a.Header.Clone()
	resp, err := a.Client.Do(req)
	if err != nil {
		w.stop()
		cancel(nil)
		return nil, Transport(ctx, "connect", err, w.fired())
	}
	w.touch()
	resp.Body = &watchedBody{r: resp.Body, w: w}
	return &Sent{Response: resp, watch: w, cancel: cancel}, nil
}

// Idled reports whether the idle watch ended this attempt.
func (s *Sent) Idled() bool { return s.watch.fired() }

// Transport classifies a failure to talk to the provider (docs/providers.md, transport
// failures): a cancelled ctx is returned unchanged; a refused redirect is provider_http_error; a
// certificate that does not verify and a body over the bound are provider_error, not retried;
// everything else (refused or reset connections, DNS, timeouts, a silent stream, a body cut
// short) is provider_error, retried.
func Transport(ctx context.Context, stage string, err error, idled bool) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var re *RedirectError
	switch {
	case errors.As(err, &re):
		return &model.Error{Key: model.KeyProviderHTTPError, Detail: re.Detail}
	case idled:
		return &model.Error{Key: model.KeyProviderError, Detail: stage + ": silent for longer than idle_timeout", Retryable: true}
	case certificateError(err):
		return &model.Error{Key: model.KeyProviderError, Detail: "tls: the server certificate does not verify"}
	case errors.Is(err, ErrBodyTooLarge):
		return &model.Error{Key: model.KeyProviderError, Detail: stage + ": " + ErrBodyTooLarge.Error()}
	}
	return &model.Error{Key: model.KeyProviderError, Detail: stage + ": " + innermost(err), Retryable: true}
}

// BrokenStream is a stream that ended before its terminal event.
func BrokenStream(terminal string, read int64) *model.Error {
	return &model.Error{Key: model.KeyProviderError, Retryable: true,
		Detail: fmt.Sprintf("stream: ended before %s after %s", terminal, size(read))}
}

// Unreadable is a response the adapter cannot read: not retried.
func Unreadable(what string) *model.Error {
	return &model.Error{Key: model.KeyProviderError, Detail: "response: " + what}
}

func size(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%d KiB", n/1024)
}

// innermost is the text of the deepest wrapped error, without the URL a *url.Error adds.
func innermost(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			break
		}
		err = next
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "the connection closed early"
	}
	return err.Error()
}

// watch cancels an attempt after a silence longer than d; every read resets it.
type watch struct {
	mu     sync.Mutex
	d      time.Duration
	t      *time.Timer
	hasRun bool
}

func newWatch(d time.Duration, fire func()) *watch {
	w := &watch{d: d}
	if d > 0 {
		w.t = time.AfterFunc(d, func() {
			w.mu.Lock()
			w.hasRun = true
			w.mu.Unlock()
			fire()
		})
	}
	return w
}

func (w *watch) touch() {
	if w.t != nil {
		w.t.Reset(w.d)
	}
}

func (w *watch) stop() {
	if w.t != nil {
		w.t.Stop()
	}
}

func (w *watch) fired() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.hasRun
}

type watchedBody struct {
	r io.ReadCloser
	w *watch
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if n > 0 {
		b.w.touch()
	}
	return n, err
}

func (b *watchedBody) Close() error { return b.r.Close() }
