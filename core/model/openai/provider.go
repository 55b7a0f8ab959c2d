package openai

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/model/wire"
)

var _ model.Preparer = (*Provider)(nil)

// Complete sends one model call: the body is built once and sent (docs/providers.md). Under the
// retry decorator, Prepare and Send are called instead, so retries resend the same bytes.
func (p *Provider) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	prepared, err := p.Prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	return p.Send(ctx, req, prepared)
}

// Prepare builds the request body once per model call.
func (p *Provider) Prepare(ctx context.Context, req *model.Request) (any, error) {
	e, err := p.encode(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	return e, nil
}

// Send performs one attempt with a prepared body.
func (p *Provider) Send(ctx context.Context, req *model.Request, prepared any) (*model.Response, error) {
	enc := prepared.(*Encoded)
	start := time.Now()
	idle := time.Duration(0)
	if p.cfg.Streams() {
		idle = *p.cfg.IdleTimeout
	}
	sent, err := wire.Send(ctx, wire.Attempt{Client: p.client, URL: p.url, Header: p.header(), Body: enc.Body, Idle: idle})
	if err != nil {
		p.logAttempt(ctx, req, 0, start, "", nil, err)
		return nil, err
	}
	defer sent.Close()
	requestID := sent.Header.Get("x-request-id")
	if sent.StatusCode < 200 || sent.StatusCode > 299 {
		body, rerr := wire.ReadBody(sent.Body, wire.MaxErrorBodyBytes)
		if rerr != nil && !errors.Is(rerr, wire.ErrBodyTooLarge) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
		}
		e := p.httpError(req, sent.StatusCode, sent.Header, body, enc.Uploads)
		p.logError(ctx, req, sent.StatusCode, start, requestID, sent.Header, body, e)
		return nil, e
	}
	var msg *message
	if p.cfg.Streams() {
		var read int64
		msg, read, err = readStream(sent.Body, p.log)
		if err != nil {
			err = p.streamFailure(ctx, err, read, sent.Idled(), requestID)
		}
	} else {
		var body []byte
		if body, err = wire.ReadBody(sent.Body, wire.MaxBodyBytes); err != nil {
			err = wire.Transport(ctx, "response", err, false)
		} else {
			msg, err = decodeCompletion(body, p.log)
		}
	}
	if err != nil {
		p.logAttempt(ctx, req, sent.StatusCode, start, requestID, nil, err)
		return nil, err
	}
	resp, err := msg.response(req, p.log)
	if err != nil {
		return nil, err
	}
	p.logAttempt(ctx, req, sent.StatusCode, start, requestID, &resp.Usage, nil)
	return resp, nil
}

// streamFailure classifies what ended a stream early.
func (p *Provider) streamFailure(ctx context.Context, err error, read int64, idled bool, requestID string) error {
	var me *model.Error
	var mid *midStreamError
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &mid):
		return p.streamError(mid.body, requestID)
	case errors.As(err, &me):
		return me
	case !idled && errors.Is(err, io.ErrUnexpectedEOF):
		return wire.BrokenStream("[DONE]", read)
	}
	return wire.Transport(ctx, "stream", err, idled)
}

func (p *Provider) logAttempt(ctx context.Context, req *model.Request, status int, start time.Time, requestID string, u *model.Usage, err error) {
	fields := []any{"provider", p.cfg.Name, "ref", req.Ref, "run", req.Run, "task", req.TaskKey, "attempt", model.AttemptOf(ctx),
		"status", status, "duration", time.Since(start).Round(time.Millisecond), "request_id", requestID}
	if u != nil {
		fields = append(fields, "input_tokens", u.InputTokens, "output_tokens", u.OutputTokens, "cached_input_tokens", u.CachedInputTokens)
	}
	var me *model.Error
	if errors.As(err, &me) {
		fields = append(fields, "error", me.Key, "detail", me.Detail)
	} else if err != nil {
		fields = append(fields, "error", err.Error())
	}
	p.log.Info("model call attempt", fields...)
}

func (p *Provider) logError(ctx context.Context, req *model.Request, status int, start time.Time, requestID string, h http.Header, body []byte, e *model.Error) {
	fields := []any{"provider", p.cfg.Name, "ref", req.Ref, "run", req.Run, "task", req.TaskKey, "attempt", model.AttemptOf(ctx),
		"status", status, "duration", time.Since(start).Round(time.Millisecond), "request_id", requestID, "error", e.Key,
		"body", model.ClipDetail(p.scrub.Scrub(string(body)), wire.MaxLoggedErrorBytes)}
	if status == http.StatusTooManyRequests {
		fields = append(fields, wire.RateLimitHeaders(h)...)
	}
	p.log.Info("model call attempt", fields...)
}
