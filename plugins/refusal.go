package plugins

import (
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/refusal"
)

// Load-refusal words (docs/plugins.md#what-the-host-checks). They are contracts: operators and the
// status route read them byte for byte. The announcement words are sdk/announce's own.
const (
	CodeCommandNotFound     = "plugin_command_not_found"
	CodeChecksumMismatch    = "plugin_checksum_mismatch"
	CodeHandshakeFailed     = "plugin_handshake_failed"
	CodeProtocolUnsupported = "plugin_protocol_unsupported"
	CodeKindMismatch        = "plugin_kind_mismatch"
	CodeConfigRefused       = "plugin_config_refused"
	CodeInvalidAnnouncement = announce.CodeInvalidAnnouncement
	CodeReservedNamespace   = announce.CodeReservedNamespace
	CodeValidationFailed    = announce.CodeValidationFailed
	// CodeStartFailed is the status word of a start that failed after the handshake
	// (Configure answered UNAVAILABLE, or the plugin died during Describe or Configure): not a
	// refusal, the supervisor retries it with backoff.
	CodeStartFailed = "plugin_start_failed"
)

// A load refusal, why a plugin did not load, is the one refusal type (sdk/refusal): its word, a
// message for people and, for a refused announcement, every failure the validator listed (the
// first names the offending tool or document and its path). Its kind says what happens next: a
// deterministic refusal (Unprocessable) waits for a reload, a failed start after the handshake
// (Unavailable) is retried by the supervisor with backoff.

// loadRefusal is a deterministic load refusal.
func loadRefusal(code, format string, args ...any) *refusal.Refusal {
	return refusal.Newf(refusal.Unprocessable, code, format, args...)
}

// startFailure is a failed start the supervisor retries.
func startFailure(code, message string) *refusal.Refusal {
	return refusal.New(refusal.Unavailable, code, message)
}

// deterministic reports whether the refusal waits for a reload instead of a retry.
func deterministic(r *refusal.Refusal) bool { return r.Kind != refusal.Unavailable }

// RefusalStatus is a load refusal as the status route shows it: its word, the offending tool or
// document name and path when an announcement was refused, and the message.
type RefusalStatus struct {
	Code    string `json:"code"`
	Name    string `json:"name,omitempty"`
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
}

// refusalStatus is r as the status route shows it, nil for none.
func refusalStatus(r *refusal.Refusal) *RefusalStatus {
	if r == nil {
		return nil
	}
	st := &RefusalStatus{Code: r.Code, Message: r.Message}
	if len(r.Errors) > 0 {
		st.Name, st.Path = r.Errors[0].Name, r.Errors[0].Path
	}
	return st
}
