package kernel

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
)

// The history tools' canonical and wire names (docs/agent-tools.md#delegation-and-conversations).
const (
	CanonicalSessionRead   = "nexus.conversation.read"
	CanonicalSessionSearch = "nexus.conversation.search"

	wireSessionRead   = "session_read"
	wireSessionSearch = "session_search"
)

// The history tools' refusal words (docs/agent-tools.md#delegation-and-conversations).
const (
	WordUnknownConversation = conversations.WordUnknownConversation
	WordTurnNotFound        = "turn_not_found"
)

// TitleSessionSearch is session_search's title.
const TitleSessionSearch = "searched history"

// SessionReadTitle is session_read's title.
func SessionReadTitle(sessionID string) string { return "read conversation " + sessionID }

// The parameters of each tool, in schema order (docs/agent-tools.md#delegation-and-conversations).
var (
	sessionReadParams   = []string{"session_id", "around_turn_id", "after_position", "before_position", "limit", "include_execution"}
	sessionSearchParams = []string{"query", "archived", "include_auxiliary", "limit", "after"}
)

// History bounds (docs/agent-tools.md#delegation-and-conversations).
const (
	// MaxHistoryTurns bounds a session_read page and DefaultHistoryLimit is its default: a page
	// is something a model reads in one go, and 50 turns is already a long stretch of talk.
	MaxHistoryTurns     = 50
	DefaultHistoryLimit = 20
	// MaxPageTextChars bounds the field text of one session_read page, in code points: about
	// 3,000 tokens, so that paging through history never floods the reader's context.
	MaxPageTextChars = 12000
	// MaxFieldChars bounds one field of one turn on a page, so that a single long answer
	// cannot spend the whole page's budget.
	MaxFieldChars = 2000
	// MaxSearchHits and DefaultSearchHits bound a session_search page.
	MaxSearchHits     = 50
	DefaultSearchHits = 20
	// MaxQueryBytes bounds a search query: a few distinctive words, not a document.
	MaxQueryBytes = 1024
)

// History runs session_read and session_search (docs/agent-tools.md#delegation-and-conversations):
// it checks the arguments, spends the page's text budget and writes the JSON; core/runs reads the
// conversations under the run principal's current access.
type History struct{}

// sessionReadAnswer is session_read's result, keys in the order of
// docs/agent-tools.md#delegation-and-conversations.
type sessionReadAnswer struct {
	Conversation historyConversation `json:"conversation"`
	Turns        []turnAnswer        `json:"turns"`
	Pagination   readPagination      `json:"pagination"`
	Truncated    bool                `json:"truncated"`
}

type historyConversation struct {
	PublicID string  `json:"public_id"`
	Title    *string `json:"title"`
}

type turnAnswer struct {
	PublicID   string           `json:"public_id"`
	Position   int64            `json:"position"`
	Kind       string           `json:"kind"`
	Role       string           `json:"role"`
	CreatedAt  string           `json:"created_at"`
	InProgress bool             `json:"in_progress"`
	Truncated  bool             `json:"truncated"`
	Prompt     *string          `json:"prompt,omitempty"`
	Steers     *string          `json:"steers,omitempty"`
	Content    *string          `json:"content,omitempty"`
	Execution  *executionAnswer `json:"execution,omitempty"`
}

type executionAnswer struct {
	RunPublicID  string       `json:"run_public_id"`
	Status       string       `json:"status"`
	Tasks        []taskAnswer `json:"tasks"`
	TasksOmitted int64        `json:"tasks_omitted"`
}

type taskAnswer struct {
	Key      string  `json:"key"`
	Kind     string  `json:"kind"`
	Status   string  `json:"status"`
	ToolName *string `json:"tool_name,omitempty"`
	Title    *string `json:"title,omitempty"`
}

type readPagination struct {
	BeforePosition *int64 `json:"before_position"`
	AfterPosition  *int64 `json:"after_position"`
	HasOlder       bool   `json:"has_older"`
	HasNewer       bool   `json:"has_newer"`
}

// Read runs session_read (docs/agent-tools.md#delegation-and-conversations).
func (History) Read(ctx context.Context, call *runs.KernelCall) (*runs.KernelOutcome, error) {
	a, err := ReadArgs(call.Input, sessionReadParams, true)
	if err != nil {
		return nil, err
	}
	sessionID, _ := a.UUID("session_id", true)
	around, hasAround := a.UUID("around_turn_id", false)
	after, hasAfter := optInt(a, "after_position", 0, NoMax)
	before, hasBefore := optInt(a, "before_position", 0, NoMax)
	limit := a.Int("limit", false, 1, MaxHistoryTurns, DefaultHistoryLimit)
	execution := a.Bool("include_execution", false, false)
	if e := a.Err(); e != nil {
		return argumentsRefused(wireSessionRead, e), nil
	}
	if cursors := btoi(hasAround) + btoi(hasAfter) + btoi(hasBefore); cursors > 1 {
		return ErrorResult(wireSessionRead, WordInvalidArguments, "use at most one of around_turn_id, before_position and after_position."), nil
	}
	req := &conversations.SessionRead{SessionID: sessionID, AroundTurnID: around, Limit: int(limit), IncludeExecution: execution}
	if hasAfter {
		req.After = &after
	}
	if hasBefore {
		req.Before = &before
	}
	w, err := conversations.ReadSession(ctx, call, req)
	switch {
	case errors.Is(err, conversations.ErrConversationUnreadable):
		return ErrorResult(wireSessionRead, WordUnknownConversation, "no conversation "+sessionID+" that you can read."), nil
	case errors.Is(err, conversations.ErrTurnNotVisible):
		return ErrorResult(wireSessionRead, WordTurnNotFound, "turn "+around+" is not in the visible history of conversation "+sessionID+"."), nil
	case err != nil:
		return nil, err
	}
	body, err := compactJSON(sessionReadPage(w))
	if err != nil {
		return nil, err
	}
	return jsonResult(body, SessionReadTitle(sessionID)), nil
}

// optInt reads an optional integer property; present is false when it is absent or refused.
func optInt(a *Args, name string, min, max int64) (int64, bool) {
	if a.err != nil {
		return 0, false
	}
	if _, ok := a.value(name, false); !ok {
		return 0, false
	}
	n := a.Int(name, false, min, max, 0)
	return n, a.err == nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sessionReadPage shapes a window into session_read's answer, spending the text budget from the
// window's near edge: each field is cut to min(MaxFieldChars, remaining) characters and, once the
// budget is spent, the remaining fields are omitted; a cut or omitted field marks its turn
// truncated, and any truncated turn the page.
func sessionReadPage(w *conversations.SessionWindow) *sessionReadAnswer {
	out := &sessionReadAnswer{Conversation: historyConversation{PublicID: w.ConversationPublicID, Title: w.Title},
		Turns: make([]turnAnswer, len(w.Turns)), Pagination: readPagination{HasOlder: w.HasOlder, HasNewer: w.HasNewer}}
	for i := range w.Turns {
		t := &w.Turns[i]
		out.Turns[i] = turnAnswer{PublicID: t.PublicID, Position: t.Position, Kind: t.Kind, Role: t.Role,
			CreatedAt: textTime(t.CreatedAt), InProgress: t.InProgress}
		if t.Execution != nil {
			ex := &executionAnswer{RunPublicID: t.Execution.RunPublicID, Status: t.Execution.Status, Tasks: []taskAnswer{},
				TasksOmitted: t.Execution.TasksOmitted}
			for _, k := range t.Execution.Tasks {
				ex.Tasks = append(ex.Tasks, taskAnswer{Key: k.Key, Kind: k.Kind, Status: k.Status, ToolName: k.ToolName, Title: k.Title})
			}
			out.Turns[i].Execution = ex
		}
	}
	remaining := MaxPageTextChars
	spend := func(text *string, truncated *bool) *string {
		if text == nil {
			return nil
		}
		n := utf8.RuneCountInString(*text)
		allowed := min(MaxFieldChars, remaining)
		if allowed == 0 {
			*truncated = true
			return nil
		}
		if n <= allowed {
			remaining -= n
			return text
		}
		*truncated = true
		remaining -= allowed
		cut := string([]rune(*text)[:allowed])
		return &cut
	}
	for _, i := range w.BudgetOrder {
		t, ta := &w.Turns[i], &out.Turns[i]
		ta.Prompt = spend(t.Prompt, &ta.Truncated)
		ta.Steers = spend(t.Steers, &ta.Truncated)
		ta.Content = spend(t.Content, &ta.Truncated)
		out.Truncated = out.Truncated || ta.Truncated
	}
	if n := len(out.Turns); n > 0 {
		first, last := out.Turns[0].Position, out.Turns[n-1].Position
		out.Pagination.BeforePosition, out.Pagination.AfterPosition = &first, &last
	}
	return out
}

// sessionSearchAnswer is session_search's result, keys in the order of
// docs/agent-tools.md#delegation-and-conversations.
type sessionSearchAnswer struct {
	Matches    []matchAnswer    `json:"matches"`
	Pagination searchPagination `json:"pagination"`
}

type matchAnswer struct {
	ConversationPublicID string  `json:"conversation_public_id"`
	Title                *string `json:"title"`
	TurnPublicID         *string `json:"turn_public_id"`
	// VariantPublicID is always null: this version has no answer variants.
	VariantPublicID *string `json:"variant_public_id"`
	Position        *int64  `json:"position"`
	Field           string  `json:"field"`
	// Inherited is always false: this version has no forks.
	Inherited bool   `json:"inherited"`
	Excerpt   string `json:"excerpt"`
	Truncated bool   `json:"truncated"`
}

type searchPagination struct {
	NextAfter *string `json:"next_after"`
}

// badCursorSentence is the refusal of an after that no page issued.
const badCursorSentence = "after is not a cursor from a previous page."

// Search runs session_search (docs/agent-tools.md#delegation-and-conversations).
func (History) Search(ctx context.Context, call *runs.KernelCall) (*runs.KernelOutcome, error) {
	a, err := ReadArgs(call.Input, sessionSearchParams, true)
	if err != nil {
		return nil, err
	}
	query, _ := a.String("query", true, true)
	if a.err == nil && len(query) > MaxQueryBytes {
		a.fail("query must be at most %d bytes.", MaxQueryBytes)
	}
	archived := a.Enum("archived", false, string(store.ArchivedExclude), string(store.ArchivedExclude), string(store.ArchivedInclude), string(store.ArchivedOnly))
	auxiliary := a.Bool("include_auxiliary", false, false)
	limit := a.Int("limit", false, 1, MaxSearchHits, DefaultSearchHits)
	after, hasAfter := a.String("after", false, false)
	if e := a.Err(); e != nil {
		return argumentsRefused(wireSessionSearch, e), nil
	}
	req := &conversations.SessionSearch{Terms: strings.Fields(query), Archived: store.ArchivedFilter(archived), IncludeAuxiliary: auxiliary, Limit: int(limit)}
	if hasAfter {
		pos, ok := DecodeSearchCursor(after)
		if !ok {
			return ErrorResult(wireSessionSearch, WordInvalidArguments, badCursorSentence), nil
		}
		req.After = &pos
	}
	page, err := conversations.SearchSessions(ctx, call, req)
	if err != nil {
		return nil, err
	}
	out := sessionSearchAnswer{Matches: make([]matchAnswer, 0, len(page.Hits))}
	for _, h := range page.Hits {
		out.Matches = append(out.Matches, matchAnswer{ConversationPublicID: h.ConversationPublicID, Title: h.Title, TurnPublicID: h.TurnPublicID,
			Position: h.Position, Field: h.Field, Excerpt: h.Excerpt, Truncated: h.Truncated})
	}
	if page.Next != nil {
		c := EncodeSearchCursor(*page.Next)
		out.Pagination.NextAfter = &c
	}
	body, err := compactJSON(out)
	if err != nil {
		return nil, err
	}
	return jsonResult(body, TitleSessionSearch), nil
}

// EncodeSearchCursor is next_after: the unpadded base64url encoding of the JSON array
// [primary, conversation, field] (docs/agent-tools.md#delegation-and-conversations).
func EncodeSearchCursor(p conversations.SearchPosition) string {
	b, _ := compactJSON([]string{p.Primary, p.Conversation, p.Field})
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeSearchCursor reads an after cursor; ok is false for anything a page could not have
// issued: not unpadded base64url of a JSON array of three strings, ids that are not lowercase
// UUIDs, a field outside the searched ones, or a title position whose primary is not its
// conversation (or a turn position whose primary is).
func DecodeSearchCursor(s string) (conversations.SearchPosition, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return conversations.SearchPosition{}, false
	}
	var parts []string
	if json.Unmarshal(b, &parts) != nil || len(parts) != 3 {
		return conversations.SearchPosition{}, false
	}
	p := conversations.SearchPosition{Primary: parts[0], Conversation: parts[1], Field: parts[2]}
	for _, id := range []string{p.Primary, p.Conversation} {
		if !identity.IsUUID(id) || strings.ToLower(id) != id {
			return conversations.SearchPosition{}, false
		}
	}
	switch p.Field {
	case conversations.FieldTitle:
		if p.Primary != p.Conversation {
			return conversations.SearchPosition{}, false
		}
	case conversations.FieldContent, conversations.FieldPrompt, conversations.FieldSteers:
		if p.Primary == p.Conversation {
			return conversations.SearchPosition{}, false
		}
	default:
		return conversations.SearchPosition{}, false
	}
	return p, true
}
