package memory

import (
	"strconv"
	"strings"
)

// ReadSlice is memory_read's slicing (docs/agent-tools.md#memory-and-skills), which the skill tool
// shares: content split into lines that keep their "\n" (a final line without one is a line; empty
// content has none), the first offset-1 dropped, at most limit shown, and when lines remain a
// footer saying how to continue. offset below 1 counts as 1; limit is clamped to 1..MaxReadLines. A
// caller with no offset or limit passes 1 and MaxReadLines.
func ReadSlice(content string, offset, limit int64) string {
	if offset < 1 {
		offset = 1
	}
	limit = min(max(limit, 1), MaxReadLines)
	// Drop offset-1 lines; an offset past the end leaves nothing.
	rest := content
	for skip := offset - 1; skip > 0 && rest != ""; skip-- {
		i := strings.IndexByte(rest, '\n')
		if i < 0 {
			rest = ""
			break
		}
		rest = rest[i+1:]
	}
	// Y: lines left, counting a final unterminated line.
	y := int64(strings.Count(rest, "\n"))
	if rest != "" && !strings.HasSuffix(rest, "\n") {
		y++
	}
	if y <= limit {
		return rest
	}
	// X = limit < Y: the shown text ends just after the limit-th "\n".
	end := 0
	for range limit {
		end += strings.IndexByte(rest[end:], '\n') + 1
	}
	var b strings.Builder
	b.Grow(end + 64)
	b.WriteString(rest[:end])
	b.WriteString("\n[Showing ")
	b.WriteString(strconv.FormatInt(limit, 10))
	b.WriteString(" of ")
	b.WriteString(strconv.FormatInt(y, 10))
	b.WriteString(" lines. Continue with offset=")
	b.WriteString(strconv.FormatInt(offset+limit, 10))
	b.WriteString(".]")
	return b.String()
}
