package wire

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/model"
)

// Exchange is one attempt of a model call with what the adapter does with each kind of answer.
type Exchange struct {
	Attempt Attempt
	// Stream: the answer is Server-Sent Events, read with Fold; otherwise one bounded body read
	// with Decode.
	Stream bool
	// Terminal names the stream's terminal event, for the broken-stream detail.
	Terminal string
	// RequestID reads the provider's request id from the response headers.
	RequestID func(http.Header) string
	// HTTPError builds the error of a non-2xx answer from its (bounded) body.
	HTTPError func(status int, h http.Header, body []byte, requestID string) *model.Error
	// Fold reads a streamed body to its end; it returns how many bytes it read. An error it
	// returns that is a *model.Error is kept; io.ErrUnexpectedEOF is a broken stream; anything
	// else is a transport failure.
	Fold func(body io.Reader, requestID string) (int64, error)
	// Decode reads a non-streamed body.
	Decode func(body []byte) error
	// Log receives the attempt's line; Fields are its labels (provider, ref, run, task).
	Log    hclog.Logger
	Fields []any
	// Scrub hides credentials in the logged error body.
	Scrub Scrubber
}

// Run performs the attempt. Its error is a classified *model.Error, or ctx.Err() when the call
// was cancelled; usage, when the adapter has it, is logged by Done.
func (x Exchange) Run(ctx context.Context) (*Done, error) {
	start := time.Now()
	done := &Done{x: x, ctx: ctx, start: start}
	sent, err := Send(ctx, x.Attempt)
	if err != nil {
		done.log(0, "", nil, err)
		return nil, err
	}
	defer sent.Close()
	requestID := x.RequestID(sent.Header)
	done.status, done.requestID = sent.StatusCode, requestID
	if sent.StatusCode < 200 || sent.StatusCode > 299 {
		body, rerr := ReadBody(sent.Body, MaxErrorBodyBytes)
		if rerr != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		e := x.HTTPError(sent.StatusCode, sent.Header, body, requestID)
		logged := x.Scrub.Scrub(string(body))
		if sent.StatusCode == http.StatusUnauthorized || sent.StatusCode == http.StatusForbidden {
			// Providers echo parts of the key they were sent, which no scrubbing of the whole
			// key finds: the log says what the task detail says.
			logged = CredentialsRefused
		}
		fields := []any{"body", model.ClipDetail(logged, MaxLoggedErrorBytes)}
		if sent.StatusCode == http.StatusTooManyRequests {
			fields = append(fields, RateLimitHeaders(sent.Header)...)
		}
		done.log(sent.StatusCode, requestID, nil, e, fields...)
		return nil, e
	}
	if x.Stream {
		read, ferr := x.Fold(sent.Body, requestID)
		if ferr != nil {
			err = streamFailure(ctx, ferr, read, sent.Idled(), x.Terminal)
		}
	} else {
		body, rerr := ReadBody(sent.Body, MaxBodyBytes)
		if rerr != nil {
			err = Transport(ctx, "response", rerr, false)
		} else {
			err = x.Decode(body)
		}
	}
	if err != nil {
		done.log(sent.StatusCode, requestID, nil, err)
		return nil, err
	}
	return done, nil
}

// Done is a successful attempt, waiting for its usage to be logged.
type Done struct {
	x         Exchange
	ctx       context.Context
	start     time.Time
	status    int
	requestID string
}

// Log writes the attempt's line with its token counts.
func (d *Done) Log(u model.Usage) { d.log(d.status, d.requestID, &u, nil) }

func (d *Done) log(status int, requestID string, u *model.Usage, err error, extra ...any) {
	if d.x.Log == nil {
		return
	}
	fields := append(append([]any{}, d.x.Fields...), "attempt", model.AttemptOf(d.ctx), "status", status,
		"duration", time.Since(d.start).Round(time.Millisecond), "request_id", requestID)
	if u != nil {
		fields = append(fields, "input_tokens", u.InputTokens, "output_tokens", u.OutputTokens,
			"cached_input_tokens", u.CachedInputTokens, "cache_write_input_tokens", u.CacheWriteInputTokens)
	}
	var me *model.Error
	if errors.As(err, &me) {
		fields = append(fields, "error", me.Key, "detail", me.Detail)
	} else if err != nil {
		fields = append(fields, "error", d.x.Scrub.Scrub(err.Error()))
	}
	d.x.Log.Info("model call attempt", append(fields, extra...)...)
}

// streamFailure classifies what ended a stream early.
func streamFailure(ctx context.Context, err error, read int64, idled bool, terminal string) error {
	var me *model.Error
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &me):
		return me
	case !idled && errors.Is(err, io.ErrUnexpectedEOF):
		return BrokenStream(terminal, read)
	}
	return Transport(ctx, "stream", err, idled)
}
