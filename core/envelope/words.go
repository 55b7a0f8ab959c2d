package envelope

import (
	"errors"

	"github.com/nexuskernel/nexus/core/refusal"
	sdkrefusal "github.com/nexuskernel/nexus/sdk/refusal"
)

// The refusal words of the envelope (docs/api.md#the-result-envelope), all 422. They are contracts:
// clients match on them byte for byte.
const (
	CodeInvalidOutcome         = "invalid_outcome"
	CodeInvalidResultType      = "invalid_result_type"
	CodeInvalidTitle           = "invalid_title"
	CodeInvalidMetadata        = "invalid_metadata"
	CodeMetadataTooLarge       = "metadata_too_large"
	CodeInvalidContent         = "invalid_content"
	CodeTooManyContentBlocks   = "too_many_content_blocks"
	CodeUnsupportedContentKind = "unsupported_content_kind"
	CodeResultTooLarge         = "result_too_large"
	CodeUnknownResultUpload    = "unknown_result_upload"
	CodeResultUnstorable       = sdkrefusal.CodeResultUnstorable
)

// What a tool row that refused result_unstorable settles with (docs/api.md#the-result-envelope):
// the commit door closes the park as failed with this error and answers with the closed message.
const (
	UnstorableErrorKey      = CodeResultUnstorable
	UnstorableDetail        = "unsupported_text: the result's bytes cannot be stored"
	UnstorableClosedMessage = "The result holds text that cannot be stored; the task has been closed as failed."
)

// ErrUnstorable matches (errors.Is) the result_unstorable refusal. Unlike every other refusal
// of this package it does not leave a tool row's park standing: the caller closes it.
var ErrUnstorable = refusal.New(refusal.Unprocessable, CodeResultUnstorable, "")

// IsUnstorable reports whether err is the result_unstorable refusal, the one that closes a
// tool row's park, as opposed to a grammar refusal after which a corrected commit may follow.
func IsUnstorable(err error) bool { return errors.Is(err, ErrUnstorable) }

// refuse builds a 422 refusal with its path ("" omits the key).
func refuse(code, path, message string) *refusal.Error {
	e := refusal.New(refusal.Unprocessable, code, message)
	if path != "" {
		e = e.With("path", path)
	}
	return e
}
