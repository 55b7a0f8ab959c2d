package memory

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// ApplyEdit replaces the single literal occurrence of oldText in content with newText
// (docs/agent-tools.md#memory-and-skills). oldText is bytes, never a pattern. A second occurrence,
// including one that overlaps the first ("aa" in "aaa"), is ErrEditAmbiguous; none is
// ErrEditNotFound; a result over MaxDocumentBytes is ErrTooLarge; an empty oldText is
// ErrInvalidArgument.
//
// Because oldText is valid UTF-8 and starts on a character boundary, a byte search never
// matches inside a multibyte character of valid content.
func ApplyEdit(content, oldText, newText string) (string, error) {
	if oldText == "" {
		return "", fmt.Errorf("%w: empty edit text", ErrInvalidArgument)
	}
	first := strings.Index(content, oldText)
	if first < 0 {
		return "", ErrEditNotFound
	}
	// Searching again one byte after the first start finds overlapping occurrences too.
	if strings.Contains(content[first+1:], oldText) {
		return "", ErrEditAmbiguous
	}
	size := len(content) - len(oldText) + len(newText)
	if size > MaxDocumentBytes {
		return "", fmt.Errorf("%w: edit result of %d bytes", ErrTooLarge, size)
	}
	return content[:first] + newText + content[first+len(oldText):], nil
}

// CheckContent checks text a store is asked to keep (a written content or an edit's new text):
// U+0000 or invalid UTF-8 is ErrContentInvalid. It does not check the size.
func CheckContent(text string) error {
	if strings.IndexByte(text, 0) >= 0 {
		return fmt.Errorf("%w: U+0000 in text", ErrContentInvalid)
	}
	if !utf8.ValidString(text) {
		return fmt.Errorf("%w: text is not UTF-8", ErrContentInvalid)
	}
	return nil
}
