package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuskernel/nexus/sdk/toolprovider"
)

const (
	// DefaultServerWait bounds how long a call waits for its server to be ready: a prompt
	// failure beats a silent wait.
	DefaultServerWait = 10 * time.Second
	// resourceReadTimeout bounds one resources/read, within the call's deadline.
	resourceReadTimeout = 10 * time.Second
)

// call sends one tools/call and classifies what came back (docs/plugins.md#what-a-model-sees).
func (b *Bridge) call(ctx context.Context, s *server, rt route, input json.RawMessage) (toolprovider.Result, error) {
	deadline := time.Now().Add(b.serverWait())
	release, ok := s.acquire(ctx, deadline)
	if !ok {
		if err := ctx.Err(); err != nil {
			return toolprovider.Result{}, err
		}
		return toolprovider.Result{}, toolprovider.Failed(busyMessage(s.cfg.Name, s.cfg.MaxConcurrency))
	}
	defer release()
	for attempt := 1; ; attempt++ {
		sess, state, ok := s.ready(ctx, max(0, time.Until(deadline)))
		if !ok {
			if err := ctx.Err(); err != nil {
				return toolprovider.Result{}, err
			}
			return toolprovider.Result{}, toolprovider.Failed(fmt.Sprintf("mcp server %s is unavailable: %s", s.cfg.Name, state))
		}
		if len(input) == 0 {
			input = json.RawMessage(`{}`)
		}
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: rt.tool.Name, Arguments: input})
		if err == nil {
			return b.translate(ctx, s, sess, rt, res), nil
		}
		var rpcErr *jsonrpc.Error
		switch {
		case ctx.Err() != nil:
			return toolprovider.Result{}, ctx.Err()
		case errors.As(err, &rpcErr):
			return toolprovider.Result{}, toolprovider.Failed(rpcErr.Message)
		case errors.Is(err, mcp.ErrSessionMissing):
			// The server refused the request without running it: reconnect and send once more.
			s.requestReconnect(sess)
			if attempt >= 2 {
				return toolprovider.Result{}, toolprovider.Failed(fmt.Sprintf("mcp server %s is unavailable: session refused", s.cfg.Name))
			}
			continue
		case isDecodeError(err):
			return toolprovider.Result{}, toolprovider.Failed(fmt.Sprintf("mcp server %s sent a result that cannot be read: %s", s.cfg.Name, decodeDetail(err)))
		default:
			s.lost(sess)
			return toolprovider.Result{}, lostAnswer(s.cfg.Name, err)
		}
	}
}

// busyMessage is the failure detail of a call that found every slot of its server taken for
// the whole wait.
func busyMessage(server string, slots int) string {
	return fmt.Sprintf("mcp server %s is busy: its %d calls at once (max_concurrency) did not end within the wait", server, slots)
}

// lostAnswer is the one place a call whose answer was lost is reported: the request reached a
// ready session and no answer came back, so the call may have taken effect. The error wraps
// toolprovider.ErrOutcomeUnknown (protocol 1.1): the host replays the call when its profile is
// replayable, else settles it uncertain at once (docs/plugins.md#protocol-11).
func lostAnswer(server string, cause error) error {
	return &LostAnswerError{Server: server, Cause: cause}
}

// LostAnswerError is a call that reached its MCP server, which then died or whose stream broke
// before it answered. It is toolprovider.ErrOutcomeUnknown and wraps the cause.
type LostAnswerError struct {
	Server string
	Cause  error
}

func (e *LostAnswerError) Error() string {
	return fmt.Sprintf("mcp server %s: the answer was lost and the call may have taken effect: %v", e.Server, e.Cause)
}

func (e *LostAnswerError) Unwrap() []error { return []error{toolprovider.ErrOutcomeUnknown, e.Cause} }

// isDecodeError reports whether the SDK received an answer it could not decode. Such an answer
// arrived, so it is no lost answer. The SDK has no sentinel for it: encoding/json's error
// types, and its own content-type errors, are what it returns.
func isDecodeError(err error) bool {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	if errors.As(err, &se) || errors.As(err, &te) {
		return true
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, mcp.ErrConnectionClosed) {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "content type") || strings.Contains(msg, "cannot unmarshal")
}

// decodeDetail drops the SDK's `calling "tools/call": ` lead.
func decodeDetail(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, `": `); i >= 0 && strings.HasPrefix(msg, "calling ") {
		return msg[i+3:]
	}
	return msg
}

// translate maps a result, reading resource links through the same session.
func (b *Bridge) translate(ctx context.Context, s *server, sess *mcp.ClientSession, rt route, res *mcp.CallToolResult) toolprovider.Result {
	_, protocol, canRead := s.snapshot()
	m := mapping{server: &s.cfg, tool: rt.tool, protocolVersion: protocol}
	if s.cfg.ReadLinks && canRead {
		m.read = func(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
			return sess.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		}
	}
	return mapResult(ctx, m, res)
}
