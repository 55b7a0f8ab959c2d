package plugins

import (
	"github.com/nexuskernel/nexus/sdk/announce"
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

// Refusal is why a plugin did not load: its word, the offending tool or document name and path
// when an announcement was refused, and a message for people.
type Refusal struct {
	Code    string `json:"code"`
	Name    string `json:"name,omitempty"`
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
	plugin  string
	// retry says the failure is a failed start the supervisor retries with backoff, rather
	// than a deterministic refusal that waits for a reload.
	retry bool
}

func (r *Refusal) Error() string { return r.Code + ": " + r.Message }

// Deterministic reports whether the refusal waits for a reload instead of a retry.
func (r *Refusal) Deterministic() bool { return !r.retry }

func announcementRefusal(name string, r *announce.Refusal) *Refusal {
	return &Refusal{Code: r.Code, Name: r.Name, Path: r.Path, Message: r.Message, plugin: name}
}
