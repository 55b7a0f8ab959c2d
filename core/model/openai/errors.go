package openai

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/model/wire"
)

// errFields are the fields of an error object, nested under "error" or, from some compatible
// servers, at the top level. code may be a number: it is read as text.
type errFields struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Param   json.RawMessage `json:"param"`
	Code    json.RawMessage `json:"code"`
}

func (f errFields) code() string  { return rawText(f.Code) }
func (f errFields) param() string { return rawText(f.Param) }

func rawText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// parseError reads an error body in either shape; ok is false for a body that is not JSON.
func parseError(body []byte) (errFields, bool) {
	var w struct {
		Error json.RawMessage `json:"error"`
		errFields
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return errFields{}, false
	}
	if len(w.Error) > 0 && w.Error[0] == '{' {
		var f errFields
		if json.Unmarshal(w.Error, &f) == nil {
			return f, true
		}
	}
	if len(w.Error) > 0 && w.Error[0] == '"' {
		return errFields{Message: rawText(w.Error)}, true
	}
	return w.errFields, true
}

// partLocation finds messages[N].content[M] in a param or message.
var partLocation = regexp.MustCompile(`messages\[(\d+)\]\.content\[(\d+)\]`)

func contextOverflow(f errFields) bool {
	if f.code() == "context_length_exceeded" {
		return true
	}
	m := strings.ToLower(f.Message)
	return strings.Contains(m, "context length") || strings.Contains(m, "context window") || strings.Contains(m, "prompt is too long")
}

func policyRefusal(f errFields) bool {
	switch f.code() {
	case "content_policy_violation", "content_filter", "invalid_prompt":
		return true
	}
	return false
}

// classify is the openai error table (docs/providers.md, openai errors): the first matching
// row decides. It returns the row's verdict and, for a refused attachment, its upload.
func classify(status int, f errFields, modelID string, uploads map[location]string) (wire.Classified, string) {
	switch {
	case status == http.StatusBadRequest && contextOverflow(f):
		return wire.Classified{Key: model.KeyProviderContextOverflow}, ""
	case status == http.StatusBadRequest && policyRefusal(f):
		return wire.Classified{Key: model.KeyModelRefused}, ""
	case status == http.StatusBadRequest:
		for _, text := range []string{f.param(), f.Message} {
			if g := partLocation.FindStringSubmatch(text); g != nil {
				n, _ := strconv.Atoi(g[1])
				m, _ := strconv.Atoi(g[2])
				if up, ok := uploads[location{n, m}]; ok {
					return wire.Classified{Key: model.KeyProviderMediaRefused}, up
				}
			}
		}
	case status == http.StatusNotFound && (f.code() == "model_not_found" || (modelID != "" && strings.Contains(f.Message, modelID))):
		return wire.Classified{Key: model.KeyProviderModelUnavailable}, ""
	case status == http.StatusRequestTimeout || status == http.StatusConflict:
		return wire.Classified{Key: model.KeyProviderHTTPError, Retryable: true}, ""
	case status == http.StatusTooManyRequests && (f.code() == "insufficient_quota" || f.Type == "insufficient_quota"):
		return wire.Classified{Key: model.KeyProviderHTTPError}, ""
	case status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable:
		return wire.Classified{Key: model.KeyProviderOverloaded, Retryable: true}, ""
	case status >= 500:
		return wire.Classified{Key: model.KeyProviderHTTPError, Retryable: true}, ""
	}
	return wire.Classified{Key: model.KeyProviderHTTPError}, ""
}

// httpError builds the error of a non-2xx answer.
func (p *Provider) httpError(req *model.Request, status int, h http.Header, body []byte, uploads map[location]string) *model.Error {
	f, ok := parseError(body)
	message := f.Message
	if !ok {
		message = "non-JSON body"
	}
	c, up := classify(status, f, req.Model, uploads)
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		message = wire.CredentialsRefused
	}
	e := p.Scrub.Finish(c, status, h, wire.HTTPDetail(status, f.Type, f.code(), message, h.Get("x-request-id")), h.Get("x-request-id"), p.Now())
	e.RefusedUpload = up
	return e
}

// streamError classifies an error chunk: as a 400 would be when it says overflow or refusal,
// otherwise as a 500.
func (p *Provider) streamError(data []byte, requestID string) *model.Error {
	f, _ := parseError(data)
	c := wire.Classified{Key: model.KeyProviderHTTPError, Retryable: true}
	switch {
	case contextOverflow(f):
		c = wire.Classified{Key: model.KeyProviderContextOverflow}
	case policyRefusal(f):
		c = wire.Classified{Key: model.KeyModelRefused}
	}
	typ := f.Type
	if code := f.code(); code != "" {
		if typ != "" {
			typ += "/"
		}
		typ += code
	}
	detail := "stream: error " + typ + ": " + f.Message
	if requestID != "" {
		detail += " (request " + requestID + ")"
	}
	return &model.Error{Key: c.Key, Retryable: c.Retryable, Detail: p.Scrub.Detail(detail), Status: http.StatusOK, RequestID: requestID}
}
