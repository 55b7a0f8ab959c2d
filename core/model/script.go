package model

import (
	"fmt"
	"strconv"
	"strings"
)

// Script bounds. The grammar is docs/mock.md#the-grammar; these bound what one script can make the
// mock hold or wait for.
const (
	// MaxSleepMillis is the longest one sleep directive waits (docs/mock.md#the-grammar: ≤ 60,000).
	MaxSleepMillis = 60_000
	// minBigcallBytes is the size of {"data":""}, the smallest arguments bigcall can pad.
	minBigcallBytes = 11
	// MaxAnswerBytes bounds the text, names and arguments of one scripted answer. It is far past
	// the 64 KiB tool input bound a bigcall exists to cross (and 256 calls of ordinary size), and
	// small enough that no script, however its substitutions multiply, makes the mock hold more.
	MaxAnswerBytes = 8 << 20
)

type directiveKind int

const (
	dirSay directiveKind = iota
	dirCall
	dirBigcall
	dirFinish
	dirError
	dirSleep
	dirUsage
)

// directive is one parsed script line.
type directive struct {
	kind directiveKind
	line int // counted from the !mock line as 0
	// say: the text; call: the arguments as written (before substitution); error: the detail.
	text string
	// call, bigcall: the tool name and, when written NAME#ID, the id.
	name  string
	id    string
	hasID bool
	// bigcall: the size of the arguments; sleep: milliseconds.
	n int
	// finish: the reason; error: the key (in text's place for the detail).
	finish Finish
	key    string
	// usage: the reported counts.
	in, out int64
}

type scriptRound struct {
	number     int
	directives []directive
}

// script is a parsed mock script: its rounds in increasing order.
type script struct {
	rounds []scriptRound
}

// round returns the directives of round n, or nil.
func (s *script) round(n int) []directive {
	for _, r := range s.rounds {
		if r.number == n {
			return r.directives
		}
	}
	return nil
}

// scriptError is a malformed script: the answer's text names the line and the reason.
type scriptError struct {
	line   int
	reason string
}

func (e *scriptError) text() string {
	return fmt.Sprintf("mock script error: line %d: %s", e.line, e.reason)
}

// parseScript parses the lines after !mock (line 1 is the first of them). The whole script is
// checked, so a script answers the same error whichever round is current.
func parseScript(lines []string) (*script, *scriptError) {
	s := &script{}
	bytesInRound := 0
	for i, raw := range lines {
		line := i + 1
		text := strings.TrimSuffix(raw, "\r")
		trimmed := strings.TrimSpace(text)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		keyword, rest := splitWord(strings.TrimLeft(text, " \t"))
		fail := func(format string, args ...any) (*script, *scriptError) {
			return nil, &scriptError{line: line, reason: fmt.Sprintf(format, args...)}
		}
		if keyword == "round" {
			arg := strings.TrimSuffix(strings.TrimSpace(rest), ":")
			n, ok := parseCount(arg)
			switch {
			case arg == "":
				return fail("round needs a number")
			case !ok:
				return fail("bad number %q", arg)
			case n < 1:
				return fail("round numbers start at 1")
			case len(s.rounds) > 0 && n <= s.rounds[len(s.rounds)-1].number:
				return fail("round %d does not follow round %d: round numbers must increase", n, s.rounds[len(s.rounds)-1].number)
			}
			s.rounds = append(s.rounds, scriptRound{number: n})
			bytesInRound = 0
			continue
		}
		d := directive{line: line}
		switch keyword {
		case "say":
			d.kind, d.text = dirSay, rest
		case "call":
			d.kind = dirCall
			target, args := splitWord(rest)
			d.name, d.id, d.hasID = strings.Cut(target, "#")
			if d.name == "" {
				return fail("call needs a tool name")
			}
			d.text = strings.TrimSpace(args)
		case "bigcall":
			d.kind = dirBigcall
			fields := strings.Fields(rest)
			if len(fields) != 2 {
				return fail("bigcall needs a tool name and a size in bytes")
			}
			d.name, d.id, d.hasID = strings.Cut(fields[0], "#")
			if d.name == "" {
				return fail("bigcall needs a tool name")
			}
			n, ok := parseCount(fields[1])
			switch {
			case !ok:
				return fail("bad number %q", fields[1])
			case n < minBigcallBytes:
				return fail("bigcall size must be at least %d bytes", minBigcallBytes)
			case n > MaxAnswerBytes:
				return fail("bigcall size must be at most %d bytes", MaxAnswerBytes)
			}
			d.n = n
			if bytesInRound += n; bytesInRound > MaxAnswerBytes {
				return fail("the round's bigcalls exceed %d bytes", MaxAnswerBytes)
			}
		case "finish":
			d.kind = dirFinish
			d.finish = Finish(strings.TrimSpace(rest))
			if !d.finish.Valid() {
				return fail("finish %q is not stop, tool_calls, length or refused", string(d.finish))
			}
		case "error":
			d.kind = dirError
			key, detail := splitWord(rest)
			if key == "" {
				return fail("error needs a key")
			}
			d.key, d.text = key, strings.TrimSpace(detail)
		case "sleep":
			d.kind = dirSleep
			arg := strings.TrimSpace(rest)
			n, ok := parseCount(arg)
			switch {
			case !ok:
				return fail("bad number %q", arg)
			case n > MaxSleepMillis:
				return fail("sleep must be at most %d milliseconds", MaxSleepMillis)
			}
			d.n = n
		case "usage":
			d.kind = dirUsage
			fields := strings.Fields(rest)
			if len(fields) != 2 {
				return fail("usage needs two token counts")
			}
			in, okIn := parseCount(fields[0])
			out, okOut := parseCount(fields[1])
			if !okIn {
				return fail("bad number %q", fields[0])
			}
			if !okOut {
				return fail("bad number %q", fields[1])
			}
			d.in, d.out = int64(in), int64(out)
		default:
			return fail("unknown directive %q", keyword)
		}
		if len(s.rounds) == 0 {
			return fail("%s before any round", keyword)
		}
		r := &s.rounds[len(s.rounds)-1]
		r.directives = append(r.directives, d)
	}
	return s, nil
}

// splitWord splits off the first word: the text up to the first space or tab, and the rest
// after the separating run of spaces and tabs.
func splitWord(s string) (word, rest string) {
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimLeft(s[i:], " \t")
}

// parseCount reads a non-negative decimal integer written with digits only.
func parseCount(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}
