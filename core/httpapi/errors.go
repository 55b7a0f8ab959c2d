package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/refusal"
)

// statusOf maps a refusal kind to its HTTP status.
func statusOf(k refusal.Kind) int {
	switch k {
	case refusal.BadRequest:
		return http.StatusBadRequest
	case refusal.Unauthorized:
		return http.StatusUnauthorized
	case refusal.Forbidden:
		return http.StatusForbidden
	case refusal.NotFound:
		return http.StatusNotFound
	case refusal.MethodNotAllowed:
		return http.StatusMethodNotAllowed
	case refusal.Conflict:
		return http.StatusConflict
	case refusal.TooLarge:
		return http.StatusRequestEntityTooLarge
	case refusal.Unprocessable:
		return http.StatusUnprocessableEntity
	case refusal.Unavailable:
		return http.StatusServiceUnavailable
	case refusal.RangeNotSatisfiable:
		return http.StatusRequestedRangeNotSatisfiable
	case refusal.TooManyRequests:
		return http.StatusTooManyRequests
	case refusal.RequestTimeout:
		return http.StatusRequestTimeout
	default:
		return http.StatusInternalServerError
	}
}

// writeError is the one error writer. A refusal is written with its status, word and extras; any
// other error is a server fault: logged with the request id, answered 500 internal_error with
// request_id in the body and nothing of the cause.
func writeError(w http.ResponseWriter, log hclog.Logger, requestID string, err error) {
	ref, ok := refusal.As(err)
	if !ok || ref.Kind == refusal.Internal {
		log.Error("request failed", "request_id", requestID, "error", err)
		ref = refusal.New(refusal.Internal, refusal.CodeInternal, "The server failed to handle this request.").
			With("request_id", requestID)
	}
	status := statusOf(ref.Kind)
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	writeJSONBytes(w, status, errorBody(ref))
}

// errorBody encodes {"error":{"code","message",extras…,"errors"}} with the extras in the order the
// refusal lists them and the list of every failure, where there is one, last.
func errorBody(ref *refusal.Error) []byte {
	var b bytes.Buffer
	b.WriteString(`{"error":{"code":`)
	b.Write(marshal(ref.Code))
	b.WriteString(`,"message":`)
	b.Write(marshal(ref.Message))
	for _, f := range ref.Extra {
		b.WriteByte(',')
		b.Write(marshal(f.Key))
		b.WriteByte(':')
		b.Write(marshal(f.Value))
	}
	if len(ref.Errors) > 0 {
		b.WriteString(`,"errors":`)
		b.Write(marshal(ref.Errors))
	}
	b.WriteString("}}\n")
	return b.Bytes()
}

// marshal encodes v compactly without HTML escaping.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte(`null`)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// contentTypeJSON is every JSON route's media type (docs/api.md#conventions).
const contentTypeJSON = "application/json; charset=utf-8"

func writeJSONBytes(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentTypeJSON)
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeJSON encodes v (compact, no HTML escaping, one trailing line feed) with a status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // a response type that cannot encode is a programming error
	}
	writeJSONBytes(w, status, b.Bytes())
}
