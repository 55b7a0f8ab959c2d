package envelope

import (
	"errors"
	"fmt"
	"mime"
	"strings"

	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// mediaTypes are the detected upload types that ride as attachments instead of text
// (docs/agent-tools.md#what-a-model-reads): the images and PDF that vision and PDF-capable models
// accept.
var mediaTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"}

// IsMediaType reports whether an upload's detected content type is media. The comparison
// drops parameters ("image/png; x=y" is image/png) and ignores case, as media types do.
func IsMediaType(contentType string) bool {
	t, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		t = strings.ToLower(strings.TrimSpace(strings.SplitN(contentType, ";", 2)[0]))
	}
	return contains(mediaTypes, t)
}

// MediaResolver answers whether the upload a link binds is media, by the upload's detected
// type (never the link's mimeType). The caller reads it from the store.
type MediaResolver func(uploadID string) bool

// Output is the text projection of stored blocks (docs/api.md#the-result-envelope): what a model
// reads as the tool result and what a task read serves as output. In block order, a text block
// contributes its text, a media link nothing (it rides as an attachment,
// docs/agent-tools.md#what-a-model-reads), any other link its canonical JSON; the contributions are
// joined with "\n"; a projection that is only whitespace is "". structured_content, title and
// metadata never enter it. A nil isMedia treats every link as non-media.
func Output(blocks []Block, isMedia MediaResolver) string {
	var parts []string
	for _, b := range blocks {
		switch {
		case !b.IsLink():
			parts = append(parts, b.Text)
		case isMedia != nil && isMedia(b.UploadID()):
			// rides as an attachment
		default:
			parts = append(parts, string(b.canonical()))
		}
	}
	out := strings.Join(parts, "\n")
	if strings.TrimSpace(out) == "" {
		return ""
	}
	return out
}

// Output is the text projection of the result's stored content.
func (r *Result) Output(isMedia MediaResolver) string { return Output(r.Content, isMedia) }

// MediaLinks returns the links whose uploads are media, in block order: what the attachment
// path carries after the round's last result.
func MediaLinks(blocks []Block, isMedia MediaResolver) []Block {
	var out []Block
	for _, b := range blocks {
		if b.IsLink() && isMedia != nil && isMedia(b.UploadID()) {
			out = append(out, b)
		}
	}
	return out
}

// FailureDetail is the error detail of a row an executor settles with outcome failed
// (docs/api.md#the-executor-plane): the first MaxFailureDetailBytes of the text projection, cut on
// a UTF-8 boundary; ok is false when the projection is blank and the detail is absent.
func FailureDetail(output string) (detail string, ok bool) {
	if strings.TrimSpace(output) == "" {
		return "", false
	}
	return CutUTF8(output, MaxFailureDetailBytes), true
}

var errStoredContent = errors.New("envelope: stored content is not a block array")

// DecodeContent reads stored content (ContentJSON) back into blocks, by the same grammar that
// admitted it. Empty input is a blank result: no blocks. A failure means the stored bytes were
// not written by this package and is reported as a plain error.
func DecodeContent(stored []byte) ([]Block, error) {
	if len(stored) == 0 {
		return nil, nil
	}
	items, err := jsonwire.SplitArray(stored)
	if err != nil {
		return nil, errStoredContent
	}
	blocks := make([]Block, 0, len(items))
	for i, item := range items {
		b, rerr := parseBlock(i, item)
		if rerr != nil {
			return nil, fmt.Errorf("%w: %s", errStoredContent, rerr.Message)
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}
