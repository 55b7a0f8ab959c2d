package conversations

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
)

// The searched fields, named as a hit names them. Their byte order is the order of the hits of
// one turn (docs/agent-tools.md#delegation-and-conversations).
const (
	FieldContent = "content"
	FieldPrompt  = "prompt"
	FieldSteers  = "steers"
	FieldTitle   = "title"
)

// Search bounds.
const (
	// MaxSearchScan bounds the rows (turns and titled conversations) one session_search call
	// reads. A search has no index to consult: it pages through the workspace's history newest
	// first and filters in Go, so a rare query over a long history would otherwise read every
	// turn the workspace ever had in one tool call, holding the calling run's transaction for
	// as long. 2,000 rows is a few hundred milliseconds of reading on either store and covers
	// weeks of a busy team's conversations; a call that reaches it answers the hits found so far
	// with a cursor at the last row read, so the model continues the same search where this
	// call stopped and never misses a hit.
	MaxSearchScan = 2000
	// searchScanBatch is how many rows one store query of the scan reads.
	searchScanBatch = 200
	// MaxExcerptChars is a long field's excerpt: enough to recognise the hit and decide whether
	// to read around it; session_read serves the rest.
	MaxExcerptChars = 500
	// excerptLead is how many characters of a long field's excerpt precede the first
	// occurrence of a term.
	excerptLead = 100
)

// SearchPosition is a place in the search order: descending primary (the turn's public id, or
// the conversation's for a title), then conversation public id ascending, then field name
// ascending. A page's cursor is the position of its last hit, or of the last row a call read.
type SearchPosition struct {
	Primary, Conversation, Field string
}

// follows reports whether p comes after q in the search order.
func (p SearchPosition) follows(q SearchPosition) bool {
	if p.Primary != q.Primary {
		return p.Primary < q.Primary
	}
	if p.Conversation != q.Conversation {
		return p.Conversation > q.Conversation
	}
	return p.Field > q.Field
}

// SessionSearch is a checked session_search request
// (docs/agent-tools.md#delegation-and-conversations).
type SessionSearch struct {
	// Terms are the query's terms as given; the search lower-cases them.
	Terms            []string
	Archived         store.ArchivedFilter
	IncludeAuxiliary bool
	Limit            int
	// After is the previous page's cursor, nil for the first page.
	After *SearchPosition
}

// SearchHit is one matching field.
type SearchHit struct {
	ConversationPublicID string
	Title                *string
	// TurnPublicID and Position are nil for a title hit.
	TurnPublicID *string
	Position     *int64
	Field        string
	Excerpt      string
	Truncated    bool
	At           SearchPosition
}

// SearchPage is one page of hits and the cursor of the next, nil when nothing follows.
type SearchPage struct {
	Hits []SearchHit
	Next *SearchPosition
}

// searchRow is one row of the merged scan: a titled conversation or a turn.
type searchRow struct {
	primary, conversation string
	title                 *string
	turn                  *HistoryTurn
}

// fields are the row's searchable fields in field-name order, each with its text.
func (r *searchRow) fields() [][2]string {
	if r.turn == nil {
		return [][2]string{{FieldTitle, *r.title}}
	}
	var out [][2]string
	for _, f := range []struct {
		name string
		text *string
	}{{FieldContent, r.turn.Content}, {FieldPrompt, r.turn.Prompt}, {FieldSteers, r.turn.Steers}} {
		if f.text != nil {
			out = append(out, [2]string{f.name, *f.text})
		}
	}
	return out
}

// end is the position after every field of the row.
func (r *searchRow) end() SearchPosition {
	if r.turn == nil {
		return SearchPosition{r.primary, r.conversation, FieldTitle}
	}
	return SearchPosition{r.primary, r.conversation, FieldSteers}
}

// scanStream is one of the scan's two sources, read in descending primary order a batch at a
// time.
type scanStream struct {
	fetch func(atMost string, inclusive bool, n int) ([]searchRow, error)
	buf   []searchRow
	last  string
	done  bool
}

// SearchSessions searches the visible history the run's principal can read in the run's workspace
// (docs/agent-tools.md#delegation-and-conversations): conversation titles and each visible turn's
// prompt, steers and content, matched by MatchField, in the search order, from after the cursor.
//
// The scan is bounded: it merges two store scans in descending public id order — the scope's
// turns and its titled conversations — in batches, filters in Go, and stops at limit+1 hits (so
// that the last page knows it is the last) or after MaxSearchScan rows, whichever comes first.
// A principal without read access now finds nothing.
func SearchSessions(ctx context.Context, call *runs.KernelCall, s *SessionSearch) (*SearchPage, error) {
	page := &SearchPage{Hits: []SearchHit{}}
	ok, err := historyPrincipalReads(ctx, call)
	if err != nil || !ok {
		return page, err
	}
	q := call.Tx
	scope := store.HistoryScope{WorkspaceID: call.WorkspaceID, Archived: s.Archived, IncludeAuxiliary: s.IncludeAuxiliary}
	turns := &scanStream{fetch: func(atMost string, inclusive bool, n int) ([]searchRow, error) {
		rows, err := store.ScanTurns(ctx, q, scope, atMost, inclusive, n)
		if err != nil {
			return nil, err
		}
		ht, err := historyTurns(ctx, q, rows)
		if err != nil {
			return nil, err
		}
		out := make([]searchRow, len(rows))
		for i := range rows {
			out[i] = searchRow{primary: rows[i].PublicID, conversation: rows[i].ConversationPublicID, title: rows[i].ConversationTitle, turn: &ht[i]}
		}
		return out, nil
	}}
	titles := &scanStream{fetch: func(atMost string, inclusive bool, n int) ([]searchRow, error) {
		cs, err := store.ScanTitledConversations(ctx, q, scope, atMost, inclusive, n)
		if err != nil {
			return nil, err
		}
		out := make([]searchRow, len(cs))
		for i := range cs {
			out[i] = searchRow{primary: cs[i].PublicID, conversation: cs[i].PublicID, title: cs[i].Title}
		}
		return out, nil
	}}
	start := ""
	if s.After != nil {
		start = s.After.Primary
	}
	scanned := 0
	// fill gives a stream a head row; false when the scan budget stops it first.
	fill := func(st *scanStream) (bool, error) {
		if len(st.buf) > 0 || st.done {
			return true, nil
		}
		n := min(searchScanBatch, MaxSearchScan-scanned)
		if n <= 0 {
			return false, nil
		}
		atMost, inclusive := st.last, false
		if atMost == "" {
			atMost, inclusive = start, true
		}
		rows, err := st.fetch(atMost, inclusive, n)
		if err != nil {
			return false, err
		}
		scanned += len(rows)
		st.buf, st.done = rows, len(rows) < n
		if len(rows) > 0 {
			st.last = rows[len(rows)-1].primary
		}
		return true, nil
	}
	terms := lowerTerms(s.Terms)
	var lastRead *SearchPosition
	for {
		okT, err := fill(turns)
		if err != nil {
			return nil, err
		}
		okC, err := fill(titles)
		if err != nil {
			return nil, err
		}
		if !okT || !okC {
			// The budget ran out: continue from the last row read.
			if len(page.Hits) <= s.Limit && lastRead != nil {
				page.Next = lastRead
			}
			break
		}
		var st *scanStream
		switch {
		case len(turns.buf) == 0 && len(titles.buf) == 0:
		case len(titles.buf) == 0 || (len(turns.buf) > 0 && turns.buf[0].primary > titles.buf[0].primary):
			st = turns
		default:
			st = titles
		}
		if st == nil {
			break
		}
		row := st.buf[0]
		st.buf = st.buf[1:]
		end := row.end()
		lastRead = &end
		for _, f := range row.fields() {
			at := SearchPosition{row.primary, row.conversation, f[0]}
			if s.After != nil && !at.follows(*s.After) {
				continue
			}
			excerpt, truncated, ok := MatchField(terms, f[1])
			if !ok {
				continue
			}
			h := SearchHit{ConversationPublicID: row.conversation, Title: row.title, Field: f[0], Excerpt: excerpt, Truncated: truncated, At: at}
			if row.turn != nil {
				h.TurnPublicID, h.Position = &row.turn.PublicID, &row.turn.Position
			}
			page.Hits = append(page.Hits, h)
		}
		if len(page.Hits) > s.Limit {
			break
		}
	}
	if len(page.Hits) > s.Limit {
		page.Hits = page.Hits[:s.Limit]
		page.Next = &page.Hits[s.Limit-1].At
	}
	return page, nil
}

// lowerTerms lower-cases each term rune by rune.
func lowerTerms(terms []string) []string {
	out := make([]string, len(terms))
	for i, t := range terms {
		out[i] = lowerRunes(t)
	}
	return out
}

// lowerRunes lower-cases a text code point by code point (unicode.ToLower on each rune), which
// keeps code-point offsets unchanged, unlike strings.ToLower's special cases.
func lowerRunes(s string) string { return strings.Map(unicode.ToLower, s) }

// MatchField matches one field's text against lower-cased terms
// (docs/agent-tools.md#delegation-and-conversations): the field matches when its lower-cased text
// contains every term as a substring. The excerpt is the whole field up to MaxExcerptChars
// characters, else a MaxExcerptChars window starting at max(0, min(p-100, n-500)), p the character
// offset of the earliest occurrence of any term and n the field's length; truncated is true when
// the excerpt is not the whole field.
func MatchField(terms []string, text string) (excerpt string, truncated, ok bool) {
	if len(terms) == 0 {
		return "", false, false
	}
	lower := lowerRunes(text)
	first := -1
	for _, t := range terms {
		i := strings.Index(lower, t)
		if i < 0 {
			return "", false, false
		}
		if first < 0 || i < first {
			first = i
		}
	}
	runes := []rune(text)
	n := len(runes)
	if n <= MaxExcerptChars {
		return text, false, true
	}
	p := utf8.RuneCountInString(lower[:first])
	start := max(0, min(p-excerptLead, n-MaxExcerptChars))
	return string(runes[start : start+MaxExcerptChars]), true, true
}
