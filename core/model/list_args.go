package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/nexuskernel/nexus/core/refusal"
)

// models_list's words and texts (docs/agent-tools.md#what-a-model-reads, docs/api.md#models).
const (
	// CodeInvalidArguments is the refusal word of a kernel tool's argument check.
	CodeInvalidArguments = "invalid_arguments"
	// ModelsListTitle is the title of a models_list result.
	ModelsListTitle = "models"
	// ModelsListRefusedTitle is the title of a refused models_list call: "<wire name> refused".
	ModelsListRefusedTitle = "models_list refused"
)

// listParameters are models_list's properties in schema order.
var listParameters = []string{"query", "limit", "offset"}

// ArgumentsError is a kernel tool's argument refusal: the sentence of
// docs/agent-tools.md#what-a-model-reads.
type ArgumentsError struct {
	Sentence string
}

func (e *ArgumentsError) Error() string { return CodeInvalidArguments + ": " + e.Sentence }

// ParseListArguments checks models_list's input the way docs/agent-tools.md#what-a-model-reads
// orders it: unknown keys first (the first in byte order is named), then query, limit and offset. A
// refusal is an *ArgumentsError. Input that is not a JSON object (never the case after the pairing
// law) is a plain error; null or empty input is {}.
func ParseListArguments(input json.RawMessage) (ListQuery, error) {
	q := ListQuery{Limit: DefaultListLimit}
	trimmed := bytes.TrimSpace(input)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return q, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		return ListQuery{}, fmt.Errorf("models_list: input is not a JSON object: %w", err)
	}
	var unknown []string
	for k := range obj {
		if !slices.Contains(listParameters, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return ListQuery{}, &ArgumentsError{fmt.Sprintf("%s is not a parameter; the parameters are %s.", unknown[0], strings.Join(listParameters, ", "))}
	}
	if raw, ok := present(obj, "query"); ok {
		if err := json.Unmarshal(raw, &q.Query); err != nil {
			return ListQuery{}, &ArgumentsError{"query must be a string."}
		}
	}
	if raw, ok := present(obj, "limit"); ok {
		n, ok := wholeNumber(raw)
		if !ok || n < 1 || n > MaxListLimit {
			return ListQuery{}, &ArgumentsError{fmt.Sprintf("limit must be an integer from 1 to %d.", MaxListLimit)}
		}
		q.Limit = int(n)
	}
	if raw, ok := present(obj, "offset"); ok {
		n, ok := wholeNumber(raw)
		if !ok || n < 0 {
			return ListQuery{}, &ArgumentsError{"offset must be an integer of at least 0."}
		}
		q.Offset = clampInt(n)
	}
	return q, nil
}

// present returns a property's value unless it is absent or null (a null optional property is
// absent, docs/agent-tools.md#what-a-model-reads).
func present(obj map[string]json.RawMessage, key string) (json.RawMessage, bool) {
	raw, ok := obj[key]
	raw = bytes.TrimSpace(raw)
	if !ok || len(raw) == 0 || string(raw) == "null" {
		return nil, false
	}
	return raw, true
}

// wholeNumber reads a JSON number whose value is whole (5 and 5.0 both count; "5" does not).
func wholeNumber(raw json.RawMessage) (float64, bool) {
	if c := raw[0]; c != '-' && (c < '0' || c > '9') {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsInf(f, 0) || f != math.Trunc(f) {
		return 0, false
	}
	return f, true
}

// errorResultWire is an error result's structured_content, {"error":{"key","detail"}}.
type errorResultWire struct {
	Error errorWire `json:"error"`
}

type errorWire struct {
	Key    string `json:"key"`
	Detail string `json:"detail,omitempty"`
}

// ToolResult is a kernel tool's settled result (docs/agent-tools.md#what-a-model-reads): one plain
// string of content, the structured value, whether it is an error result, and the title.
type ToolResult struct {
	Content           string
	StructuredContent json.RawMessage
	IsError           bool
	Title             string
}

// ModelsList runs models_list against the catalog: the page as compact JSON in content and as
// structured_content with title "models", or the invalid_arguments error result. An error is
// returned only for input that is not a JSON object.
func (c *Catalog) ModelsList(input json.RawMessage) (ToolResult, error) {
	q, err := ParseListArguments(input)
	var ae *ArgumentsError
	if errors.As(err, &ae) {
		sc, err := encodeCompact(errorResultWire{Error: errorWire{Key: CodeInvalidArguments, Detail: ae.Sentence}})
		if err != nil {
			return ToolResult{}, err
		}
		return ToolResult{Content: ae.Error(), StructuredContent: sc, IsError: true, Title: ModelsListRefusedTitle}, nil
	}
	if err != nil {
		return ToolResult{}, err
	}
	body, err := c.List(q).MarshalJSON()
	if err != nil {
		return ToolResult{}, err
	}
	return ToolResult{Content: string(body), StructuredContent: body, Title: ModelsListTitle}, nil
}

// ParseListParams reads the query string of GET /agent_api/v1/models (url.Values, or any map of
// the same shape): query as is; limit an integer 1..100 and offset an integer ≥ 0, written in
// decimal digits. A bad value is 400 parameter_invalid with path naming the parameter; an empty
// value is an absent one.
func ParseListParams(values map[string][]string) (ListQuery, error) {
	get := func(k string) string {
		if v := values[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	q := ListQuery{Query: get("query"), Limit: DefaultListLimit}
	if s := get("limit"); s != "" {
		n, ok := parseCount(s)
		if !ok || n < 1 || n > MaxListLimit {
			return ListQuery{}, refusal.Newf(refusal.BadRequest, refusal.CodeParameterInvalid,
				"limit must be an integer from 1 to %d.", MaxListLimit).With("path", "limit")
		}
		q.Limit = n
	}
	if s := get("offset"); s != "" {
		if strings.Trim(s, "0123456789") != "" {
			return ListQuery{}, refusal.New(refusal.BadRequest, refusal.CodeParameterInvalid,
				"offset must be an integer of at least 0.").With("path", "offset")
		}
		n, ok := parseCount(s)
		if !ok {
			n = math.MaxInt32 // more digits than an int holds: past every end
		}
		q.Offset = n
	}
	return q, nil
}
