package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/nexuskernel/nexus/core/model"
)

// The id and name rules of the providers' wires.
const (
	// MaxOpenAIIDLen and MaxAnthropicIDLen are the longest tool call ids each wire accepts.
	MaxOpenAIIDLen    = 40
	MaxAnthropicIDLen = 128
	// MaxToolNameLen is both providers' longest tool name.
	MaxToolNameLen = 64
)

// wireChars reports whether s is 1..max characters of A-Z a-z 0-9 _ -, the alphabet of both
// wires' names and ids.
func wireChars(s string, max int) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ValidToolName reports whether an offered tool's name fits both wires' rule: 1-64 characters of
// A-Z a-z 0-9 _ -.
func ValidToolName(name string) bool { return wireChars(name, MaxToolNameLen) }

// ToolNameError is the detail of model_capability_unavailable for an offered name outside the rule.
func ToolNameError(name string) *model.Error {
	return &model.Error{Key: model.KeyModelCapabilityUnavailable,
		Detail: fmt.Sprintf("tool name %q does not fit this provider's name rule (1-64 of A-Z a-z 0-9 _ -)", name)}
}

// IDs are the wire ids of a request's replayed calls: for each assistant entry (by index) its
// calls' ids, and for each tool entry the id of the call it answers.
type IDs struct {
	Calls map[int][]string
	Tools map[int]string
}

// WireIDs computes the wire id of every replayed call. A call keeps its original id when the id
// fits (1..maxLen characters of A-Z a-z 0-9 _ -) and no earlier call of the request used it;
// otherwise its id is "kc_" and the first 24 hex digits of SHA-256 over the original id, NUL,
// the entry's index, NUL, the call's index. Tool entries pair with the calls of the assistant
// entry before them by position; a tool entry naming another id means the sealed request is
// malformed (provider_error).
func WireIDs(entries []model.Entry, maxLen int) (IDs, error) {
	ids := IDs{Calls: map[int][]string{}, Tools: map[int]string{}}
	used := map[string]bool{}
	var pending []model.ToolCall
	var pendingIDs []string
	for i, e := range entries {
		switch e.Role {
		case model.RoleAssistant:
			pending, pendingIDs = e.ToolCalls, nil
			for j, c := range e.ToolCalls {
				id := c.ID
				if !wireChars(id, maxLen) || used[id] {
					id = replacementID(c.ID, i, j)
				}
				used[id] = true
				pendingIDs = append(pendingIDs, id)
			}
			if len(pendingIDs) > 0 {
				ids.Calls[i] = pendingIDs
			}
		case model.RoleTool:
			if len(pending) == 0 {
				return IDs{}, &model.Error{Key: model.KeyProviderError, Detail: fmt.Sprintf("sealed request pairs tool entry %d with no call", i)}
			}
			if e.ToolCallID != pending[0].ID {
				return IDs{}, &model.Error{Key: model.KeyProviderError, Detail: fmt.Sprintf("sealed request pairs tool entry %d with call %s", i, pending[0].ID)}
			}
			ids.Tools[i] = pendingIDs[0]
			pending, pendingIDs = pending[1:], pendingIDs[1:]
		default:
			pending, pendingIDs = nil, nil
		}
	}
	return ids, nil
}

func replacementID(orig string, entry, call int) string {
	h := sha256.New()
	h.Write([]byte(orig))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(entry)))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(call)))
	return "kc_" + hex.EncodeToString(h.Sum(nil))[:24]
}
