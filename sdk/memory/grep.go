package memory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// grepCheckEvery is how many lines a Matcher scans between two looks at the deadline: often
// enough that a huge document cannot overrun the budget by much, rarely enough that the check
// costs nothing next to matching.
const grepCheckEvery = 256

// CompilePattern compiles a grep pattern as Go's regexp (RE2) does, with "(?i)" in front when
// ignoreCase is set. An empty or invalid pattern is ErrPatternInvalid.
func CompilePattern(pattern string, ignoreCase bool) (*regexp.Regexp, error) {
	if pattern == "" {
		return nil, fmt.Errorf("%w: empty pattern", ErrPatternInvalid)
	}
	if ignoreCase {
		pattern = "(?i)" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPatternInvalid, err)
	}
	return re, nil
}

// GrepLines splits content into grep lines: the text between line breaks, without its "\n" and
// without one trailing "\r". A final "\n" ends the last line rather than starting an empty one,
// and empty content has no lines.
func GrepLines(content string) []string {
	var out []string
	eachLine(content, func(_ int, line string) bool {
		out = append(out, line)
		return true
	})
	return out
}

// eachLine calls fn with each grep line of content and its 1-based number until fn answers
// false.
func eachLine(content string, fn func(n int, line string) bool) {
	for n := 1; content != ""; n++ {
		line := content
		if i := strings.IndexByte(content, '\n'); i >= 0 {
			line, content = content[:i], content[i+1:]
		} else {
			content = ""
		}
		line = strings.TrimSuffix(line, "\r")
		if !fn(n, line) {
			return
		}
	}
}

// ClampLine cuts a line to its first MaxGrepLineChars characters and says whether it did.
func ClampLine(line string) (text string, clamped bool) {
	if len(line) <= MaxGrepLineChars {
		return line, false // fewer bytes than the limit means fewer characters too
	}
	count := 0
	for i := range line {
		if count == MaxGrepLineChars {
			return line[:i], true
		}
		count++
	}
	return line, false
}

// Matcher runs one grep over the documents a store feeds it in name order, so every store
// applies the same line split, matching, clamp, limit and deadline checks. A store creates it
// with NewMatcher, calls Scan for each document until Scan answers done, and answers Response.
type Matcher struct {
	re *regexp.Regexp
	// literal is the whole pattern when it is a plain string: a line matches iff it contains it.
	literal string
	isExact bool
	prefix  string // every match starts with it; a document without it cannot match
	// The same two as bytes, for ScanBytes.
	literalBytes, prefixBytes []byte
	limit                     int
	response                  GrepResponse
	done                      bool
}

// NewMatcher checks a request's limit (ErrInvalidArgument outside 0..MaxGrepLimit) and compiles
// its pattern (ErrPatternInvalid).
func NewMatcher(req *GrepRequest) (*Matcher, error) {
	if req.Limit < 0 || req.Limit > MaxGrepLimit {
		return nil, fmt.Errorf("%w: grep limit %d outside 0..%d", ErrInvalidArgument, req.Limit, MaxGrepLimit)
	}
	re, err := CompilePattern(req.Pattern, req.IgnoreCase)
	if err != nil {
		return nil, err
	}
	m := &Matcher{re: re, limit: req.Limit}
	m.prefix, m.isExact = re.LiteralPrefix()
	if m.isExact {
		m.literal = m.prefix
	}
	m.literalBytes, m.prefixBytes = []byte(m.literal), []byte(m.prefix)
	return m, nil
}

// CheckDeadline answers ErrPatternTooCostly once ctx's deadline has passed and ctx's own error
// when it was canceled; stores call it between documents they read themselves.
func CheckDeadline(ctx context.Context) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: search budget spent", ErrPatternTooCostly)
	}
	return err
}

// Scan matches one document's lines. It answers done once the response is complete: Limit
// matches are held and one more exists. The store then stops and answers Response.
func (m *Matcher) Scan(ctx context.Context, name, content string) (done bool, err error) {
	if m.done {
		return true, nil
	}
	if err := CheckDeadline(ctx); err != nil {
		return false, err
	}
	// A document that lacks the pattern's literal part cannot hold a matching line, since every
	// line is a substring of the content; skipping it keeps literal searches at memory speed.
	if m.prefix != "" && !strings.Contains(content, m.prefix) {
		return false, nil
	}
	eachLine(content, func(n int, line string) bool {
		if n%grepCheckEvery == 0 {
			if err = CheckDeadline(ctx); err != nil {
				return false
			}
		}
		if m.isExact && !strings.Contains(line, m.literal) || !m.isExact && !m.re.MatchString(line) {
			return true
		}
		return !m.record(name, n, line)
	})
	if err != nil {
		return false, err
	}
	return m.done, nil
}

// ScanBytes is Scan over content held as bytes, which a store that reads files can pass without
// first copying it into a string. content is not kept after the call.
func (m *Matcher) ScanBytes(ctx context.Context, name string, content []byte) (done bool, err error) {
	if m.done {
		return true, nil
	}
	if err := CheckDeadline(ctx); err != nil {
		return false, err
	}
	if m.prefix != "" && !bytes.Contains(content, m.prefixBytes) {
		return false, nil
	}
	for n := 1; len(content) > 0; n++ {
		line := content
		if i := bytes.IndexByte(content, '\n'); i >= 0 {
			line, content = content[:i], content[i+1:]
		} else {
			content = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if n%grepCheckEvery == 0 {
			if err := CheckDeadline(ctx); err != nil {
				return false, err
			}
		}
		if m.isExact && !bytes.Contains(line, m.literalBytes) || !m.isExact && !m.re.Match(line) {
			continue
		}
		if m.record(name, n, string(line)) {
			return true, nil
		}
	}
	return m.done, nil
}

// record keeps a matching line, or marks the response truncated when Limit matches are already
// held; it answers whether the response is complete.
func (m *Matcher) record(name string, n int, line string) (done bool) {
	if len(m.response.Matches) == m.limit {
		m.response.Truncated, m.done = true, true
		return true
	}
	text, clamped := ClampLine(line)
	m.response.Matches = append(m.response.Matches, Match{Name: name, LineNumber: n, Text: text, Clamped: clamped})
	return false
}

// Response answers the matches collected so far and whether a further one exists.
func (m *Matcher) Response() *GrepResponse {
	out := m.response
	out.Matches = append([]Match(nil), m.response.Matches...)
	return &out
}
