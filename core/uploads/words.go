package uploads

import (
	"fmt"

	"github.com/nexuskernel/nexus/core/refusal"
)

// CodeUnknownInputUpload is the refusal of an input attachment that is not the member's own upload
// (docs/api.md#conversations, docs/api.md#runs): unknown, reclaimed, another creator's, or an
// executor's capture.
const CodeUnknownInputUpload = "unknown_input_upload"

// errTooLarge is the refusal of an upload over MaxBytes; nothing of it is kept.
var errTooLarge = refusal.Newf(refusal.TooLarge, refusal.CodeContentTooLarge,
	"The upload exceeds %d bytes; nothing was kept.", MaxBytes)

func errNoUpload(ref string) error {
	return refusal.Newf(refusal.NotFound, refusal.CodeNotFound, "No upload %s.", ref)
}

func errMalformedID(ref string) error {
	return refusal.New(refusal.BadRequest, refusal.CodeParameterInvalid,
		fmt.Sprintf("%q is not an upload id.", ref)).With("path", "public_id")
}
