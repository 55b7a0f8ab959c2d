package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Client calls one Nexus server with one bearer token.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// Option adjusts a Client.
type Option func(*Client)

// WithHTTPClient replaces the default HTTP client (defaultHTTP).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// New returns a client of the server at baseURL (for example http://127.0.0.1:7400) that sends
// token as its bearer credential.
func New(baseURL, token string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), token: token, http: defaultHTTP}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Error is a refusal the server answered: {"error":{"code","message",…}}.
type Error struct {
	// Status is the HTTP status.
	Status int
	// Code is the server's stable word, for example "unauthorized".
	Code string
	// Message is a sentence for people.
	Message string
	// Extra holds the other keys of the error object (path, word, request_id, …).
	Extra map[string]json.RawMessage
	// RetryAfter is the Retry-After of a 429 rate_limited answer; zero when none was sent.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
}

// maxErrorBody bounds how much of an error response the client reads.
const maxErrorBody = 1 << 20

// do sends a request and returns the response body of a 2xx answer, or *Error.
func (c *Client) do(ctx context.Context, method, path string, in any, hdr http.Header) (*http.Response, []byte, error) {
	var body io.Reader
	switch v := in.(type) {
	case nil:
	case json.RawMessage:
		// Sent verbatim: json.Marshal would compact it and escape HTML characters.
		body = bytes.NewReader(v)
	default:
		b, err := json.Marshal(in)
		if err != nil {
			return nil, nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, nil, err
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode != http.StatusNotModified {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		e := decodeError(resp.StatusCode, raw)
		if ce, ok := e.(*Error); ok {
			ce.RetryAfter = retryAfter(resp.Header.Get("Retry-After"))
		}
		return resp, nil, e
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp, nil, err
	}
	return resp, raw, nil
}

func decodeError(status int, raw []byte) error {
	var env struct {
		Error map[string]json.RawMessage `json:"error"`
	}
	e := &Error{Status: status}
	if json.Unmarshal(raw, &env) != nil || env.Error == nil {
		e.Code = http.StatusText(status)
		e.Message = strings.TrimSpace(string(raw))
		return e
	}
	_ = json.Unmarshal(env.Error["code"], &e.Code)
	_ = json.Unmarshal(env.Error["message"], &e.Message)
	delete(env.Error, "code")
	delete(env.Error, "message")
	if len(env.Error) > 0 {
		e.Extra = env.Error
	}
	return e
}
