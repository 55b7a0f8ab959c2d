package openai

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/model/wire"
)

// Complete sends one model call: the body is built once and sent (docs/providers.md). Under the
// retry decorator, Prepare and Send are called instead, so retries resend the same bytes.
func (p *Provider) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	return wire.Complete(ctx, p, req)
}

// Prepare builds the request body once per model call.
func (p *Provider) Prepare(ctx context.Context, req *model.Request) (any, error) {
	e, err := p.encode(ctx, req)
	return wire.Prepared(ctx, e, err)
}

// Send performs one attempt with a prepared body.
func (p *Provider) Send(ctx context.Context, req *model.Request, prepared any) (*model.Response, error) {
	enc := prepared.(*Encoded)
	var msg *message
	x := wire.Exchange{
		Attempt:   wire.Attempt{Client: p.Client, URL: p.URL, Header: p.header(), Body: enc.Body, Idle: p.Idle()},
		Stream:    p.Cfg.Streams(),
		Terminal:  "[DONE]",
		RequestID: func(h http.Header) string { return h.Get("x-request-id") },
		HTTPError: func(status int, h http.Header, body []byte, _ string) *model.Error {
			return p.httpError(req, status, h, body, enc.Uploads)
		},
		Fold: func(body io.Reader, requestID string) (int64, error) {
			m, read, err := readStream(body, p.Log, req.Emitter(ctx))
			var mid *midStreamError
			if errors.As(err, &mid) {
				return read, p.streamError(mid.body, requestID)
			}
			msg = m
			return read, err
		},
		Decode: func(body []byte) error {
			m, err := decodeCompletion(body, p.Log)
			msg = m
			return err
		},
		Log:    p.Log,
		Fields: p.LogFields(req),
		Scrub:  p.Scrub,
	}
	done, err := x.Run(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := msg.response(req, p.Log)
	if err != nil {
		return nil, err
	}
	done.Log(resp.Usage)
	return resp, nil
}
