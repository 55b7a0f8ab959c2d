package anthropic

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/model/wire"
)

// errorBody is {"type": "error", "error": {"type", "message", "details"?}, "request_id"}.
type errorBody struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Details *struct {
			ErrorCode string `json:"error_code"`
		} `json:"details"`
	} `json:"error"`
	RequestID string `json:"request_id"`
}

// blockLocation is the location an invalid_request_error message may begin with.
var blockLocation = regexp.MustCompile(`^messages\.(\d+)\.content\.(\d+)`)

func overflow(msg string) bool {
	m := strings.ToLower(msg)
	return strings.HasPrefix(m, "prompt is too long") || strings.Contains(m, "context limit") || strings.Contains(m, "context window")
}

// classify is the anthropic error table (docs/providers.md, anthropic errors): the first
// matching row decides.
func classify(status int, e errorBody, uploads map[location]string) (wire.Classified, string) {
	typ, msg := e.Error.Type, e.Error.Message
	switch {
	case status == http.StatusBadRequest && typ == "invalid_request_error" && overflow(msg):
		return wire.Classified{Key: model.KeyProviderContextOverflow}, ""
	case status == http.StatusBadRequest && typ == "invalid_request_error":
		if g := blockLocation.FindStringSubmatch(msg); g != nil {
			n, _ := strconv.Atoi(g[1])
			m, _ := strconv.Atoi(g[2])
			if up, ok := uploads[location{n, m}]; ok {
				return wire.Classified{Key: model.KeyProviderMediaRefused}, up
			}
		}
	case status == http.StatusNotFound && typ == "not_found_error" && strings.Contains(strings.ToLower(msg), "model"):
		return wire.Classified{Key: model.KeyProviderModelUnavailable}, ""
	case status == http.StatusRequestTimeout || status == http.StatusConflict:
		return wire.Classified{Key: model.KeyProviderHTTPError, Retryable: true}, ""
	case status == http.StatusTooManyRequests && e.Error.Details != nil && e.Error.Details.ErrorCode == "enforced_spend_limit_reached":
		return wire.Classified{Key: model.KeyProviderHTTPError}, ""
	case status == http.StatusTooManyRequests, status == 529:
		return wire.Classified{Key: model.KeyProviderOverloaded, Retryable: true}, ""
	case status >= 500:
		return wire.Classified{Key: model.KeyProviderHTTPError, Retryable: true}, ""
	}
	return wire.Classified{Key: model.KeyProviderHTTPError}, ""
}

func requestID(h http.Header, e errorBody) string {
	if id := h.Get("request-id"); id != "" {
		return id
	}
	return e.RequestID
}

// httpError builds the error of a non-2xx answer.
func (p *Provider) httpError(status int, h http.Header, body []byte, uploads map[location]string) *model.Error {
	var e errorBody
	message := "non-JSON body"
	if json.Unmarshal(body, &e) == nil {
		message = e.Error.Message
	}
	c, up := classify(status, e, uploads)
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		message = wire.CredentialsRefused
	}
	id := requestID(h, e)
	out := p.Scrub.Finish(c, status, h, wire.HTTPDetail(status, e.Error.Type, "", message, id), id, p.Now())
	out.RefusedUpload = up
	return out
}

// streamError classifies an error event by its type: overloaded and rate limits are
// provider_overloaded, server errors provider_http_error, both retried; any other as its 4xx
// row would be.
func (p *Provider) streamError(data []byte, id string, uploads map[location]string) *model.Error {
	var e errorBody
	_ = json.Unmarshal(data, &e)
	var c wire.Classified
	up := ""
	switch e.Error.Type {
	case "overloaded_error", "rate_limit_error":
		c = wire.Classified{Key: model.KeyProviderOverloaded, Retryable: true}
	case "api_error", "timeout_error":
		c = wire.Classified{Key: model.KeyProviderHTTPError, Retryable: true}
	default:
		c, up = classify(http.StatusBadRequest, e, uploads)
	}
	detail := "stream: error " + e.Error.Type + ": " + e.Error.Message
	if id != "" {
		detail += " (request " + id + ")"
	}
	return &model.Error{Key: c.Key, Retryable: c.Retryable, Detail: p.Scrub.Detail(detail), Status: http.StatusOK, RequestID: id, RefusedUpload: up}
}
