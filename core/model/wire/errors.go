package wire

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/nexuskernel/nexus/core/model"
)

// Error body and log bounds.
const (
	// MaxErrorBodyBytes is how much of an error body is read: enough to classify and explain.
	MaxErrorBodyBytes = 64 << 10
	// MaxLoggedErrorBytes bounds an error body in a log line: never a flood.
	MaxLoggedErrorBytes = 1 << 10
)

// CredentialsRefused replaces the message of a 401 or 403, because providers echo parts of the
// key they were sent.
const CredentialsRefused = "the provider refused the credentials"

// Scrubber replaces every occurrence of a provider's credentials in a text with "[redacted]".
type Scrubber struct{ secrets []string }

// NewScrubber scrubs these values (the key and every header value read from env()).
func NewScrubber(secrets []string) Scrubber {
	var s []string
	for _, v := range secrets {
		if v != "" {
			s = append(s, v)
		}
	}
	return Scrubber{secrets: s}
}

// Scrub hides the credentials in s.
func (s Scrubber) Scrub(text string) string {
	for _, v := range s.secrets {
		text = strings.ReplaceAll(text, v, "[redacted]")
	}
	return text
}

// Detail is an error detail ready for a task: scrubbed and clipped to 512 bytes.
func (s Scrubber) Detail(text string) string {
	return model.ClipDetail(s.Scrub(text), model.MaxDetailBytes)
}

// HTTPDetail writes "HTTP STATUS TYPE[/CODE]: MESSAGE (request ID)"; parts without a value are
// left out.
func HTTPDetail(status int, typ, code, message, requestID string) string {
	var b strings.Builder
	b.WriteString("HTTP ")
	b.WriteString(strconv.Itoa(status))
	if typ != "" || code != "" {
		b.WriteByte(' ')
		b.WriteString(typ)
		if code != "" {
			if typ != "" {
				b.WriteByte('/')
			}
			b.WriteString(code)
		}
	}
	b.WriteString(": ")
	b.WriteString(message)
	if requestID != "" {
		b.WriteString(" (request ")
		b.WriteString(requestID)
		b.WriteByte(')')
	}
	return b.String()
}

// RetryAfter is the wait a response asks for: retry-after-ms in milliseconds, else retry-after
// in seconds or as an HTTP date; 0 when it asks for none.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("retry-after"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// ShouldRetry reads x-should-retry: set reports whether the header says true or false.
func ShouldRetry(h http.Header) (retry, set bool) {
	switch strings.ToLower(strings.TrimSpace(h.Get("x-should-retry"))) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// loggedHeader reports whether a response header may appear in a log line.
func loggedHeader(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "x-request-id", "request-id", "retry-after", "retry-after-ms", "x-should-retry":
		return true
	}
	return strings.HasPrefix(n, "x-ratelimit-") || strings.HasPrefix(n, "anthropic-ratelimit-")
}

// RateLimitHeaders are a 429's rate-limit headers, as log fields (name, value, …).
func RateLimitHeaders(h http.Header) []any {
	var out []any
	for name, vs := range h {
		if loggedHeader(name) && len(vs) > 0 {
			out = append(out, strings.ToLower(name), vs[0])
		}
	}
	return out
}

// Classified is the verdict of an error table row.
type Classified struct {
	Key       string
	Retryable bool
}

// Finish builds the *model.Error of an HTTP error: its key and retry verdict (x-should-retry
// overriding it), the scrubbed detail, the wait asked for and the request id.
func (s Scrubber) Finish(c Classified, status int, h http.Header, detail, requestID string, now time.Time) *model.Error {
	if v, set := ShouldRetry(h); set {
		c.Retryable = v
	}
	return &model.Error{Key: c.Key, Detail: s.Detail(detail), Retryable: c.Retryable, RetryAfter: RetryAfter(h, now),
		Status: status, RequestID: requestID}
}
