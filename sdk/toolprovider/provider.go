package toolprovider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/memory"
)

// Provider serves tools. Announce is called after Configure; Call once per claimed row, under a
// context that carries the row's deadline and ends when the row is cancelled.
type Provider interface {
	// Announce answers the tools, documents and environment this provider serves. The host
	// validates it exactly as the HTTP announcement door does, plus the plugin-only rules.
	Announce(ctx context.Context) (announce.Announcement, error)
	// Call runs one tool call. A tool that ran and wants the model to read a failure answers a
	// Result with IsError; a tool that could not run answers a Result with Failed and its own
	// FailureDetail (or, the same, the error Failed(detail)). Any other error means the tool
	// could not run: ErrUnknownTool; ErrOutcomeUnknown when the call reached the tool and its
	// answer was lost; anything else, which the row settles as tool_failed with
	// "<kind word>: <message>" (docs/development.md#the-plugin-host).
	Call(ctx context.Context, call Call) (Result, error)
}

// Reannouncer is implemented by a Provider whose announcement can change after Configure
// (protocol 1.1, docs/plugins.md#protocol-11). Serve answers WatchAnnouncement from it and
// reports AnnouncementRevision in Describe; without it, WatchAnnouncement answers
// Unimplemented and the host keeps the announcement the plugin loaded with.
type Reannouncer interface {
	// AnnouncementRevision is the revision of what Announce returns now. It increases with
	// every change of the announcement.
	AnnouncementRevision() uint64
	// AnnouncementChanges delivers the new revision after each change until ctx ends. A slow
	// reader may miss intermediate revisions, never the latest one.
	AnnouncementChanges(ctx context.Context) <-chan uint64
}

// Call is one claimed row.
type Call struct {
	// Tool is the served name.
	Tool string
	// Input is the row's tool_input, a JSON object.
	Input json.RawMessage
	Scope CallScope
	// Deadline is the row's park deadline; ctx carries it too.
	Deadline time.Time
	Claim    ClaimInfo
}

// Decode unmarshals Input into v strictly: unknown fields, a second value and a value of the
// wrong type are errors, whose text a tool may hand back as "invalid input: <reason>".
func (c Call) Decode(v any) error {
	dec := json.NewDecoder(bytes.NewReader(c.Input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the input object")
	}
	return nil
}

// CallScope says where a call runs.
type CallScope struct {
	WorkspaceID string
	// ConversationID is empty on a standalone run.
	ConversationID string
	RunID          string
	TaskKey        string
	ToolCallID     string
	ToolAlias      string
	// MemoryBindings is set only on rows for memory wire names: the call's resolved memory
	// configuration, to run memory.Engine with.
	MemoryBindings []memory.Scope
}

// ClaimInfo describes the claim the host holds for the call.
type ClaimInfo struct {
	ExecutorID string
	ClaimedAt  time.Time
	// Attempt is 1 on the first call; higher on a replay after a crash: of the plugin, or of the
	// server instance that held the call, whose claim another instance's copy of the plugin
	// took over (docs/operations.md#instance-liveness-and-takeover).
	Attempt int
	// Replay is true when Attempt > 1.
	Replay bool
}

// Result is the result envelope of a commit.
type Result struct {
	// Text is the content when Blocks is nil; "" writes no body.
	Text string
	// Blocks are text and resource_link blocks; when non-nil they are the content.
	Blocks []Block
	// Structured is structured_content: nil omits it; "null" and "false" are kept.
	Structured json.RawMessage
	// IsError says the tool ran and reports an error the model reads.
	IsError bool
	// Title is the UI-only one-line header; "" sends none.
	Title string
	// Metadata is a UI-only JSON object; key "checkpoint" is reserved. nil sends none.
	Metadata json.RawMessage
	// Captures are files the host stages and links: a capture is kept only when a block's link
	// names it with uri "capture:<ref>".
	Captures []Capture
	// Failed says the tool could not run: the row settles failed (tool_failed) with
	// FailureDetail as its detail, exactly, and every other field is ignored.
	Failed        bool
	FailureDetail string
}

// Block is one content block: exactly one of Text and Link is set.
type Block struct {
	Text *string
	Link *ResourceLink
}

// TextBlock is a text block.
func TextBlock(text string) Block { return Block{Text: &text} }

// LinkBlock is a resource_link block.
func LinkBlock(link ResourceLink) Block { return Block{Link: &link} }

// ResourceLink links a capture of the same Result. The optional fields are sent only when
// set: "" and 0 mean absent.
type ResourceLink struct {
	// URI is "capture:<ref>", naming a Capture of the same Result.
	URI string
	// Name is required.
	Name        string
	MimeType    string
	Size        int64
	Title       string
	Description string
}

// CaptureURI is the link URI naming the capture ref.
func CaptureURI(ref string) string { return "capture:" + ref }

// Capture is a file a result carries.
type Capture struct {
	// Ref is unique within the Result, [a-z0-9_-]{1,64}.
	Ref      string
	Filename string
	Data     []byte
}

// ErrUnknownTool answers a call for a tool the provider does not serve.
var ErrUnknownTool = errors.New("toolprovider: unknown tool")

// ErrOutcomeUnknown means the call reached the tool and its answer was lost, so it may have
// taken effect (protocol 1.1). The host settles the row as if the plugin had crashed during the
// call, without restarting the plugin: replayed when the frozen profile is replayable, else
// uncertain at once (docs/plugins.md#protocol-11). A host at minor 0 fails the row tool_failed.
var ErrOutcomeUnknown = errors.New("toolprovider: outcome unknown")

// FailedError is a call that could not run, with a detail in the tool's own words: the row
// settles failed (tool_failed) with Detail as its detail, unprefixed. On the host, a plugin's
// Result with Failed comes back as this error.
type FailedError struct {
	Detail string
}

func (e *FailedError) Error() string { return "toolprovider: call failed: " + e.Detail }

// Failed answers a call that could not run, with detail as the row's failure detail.
func Failed(detail string) error { return &FailedError{Detail: detail} }

// CallError is a typed error a plugin's Call returned, as the host receives it: the error
// kind's word (the protocol enum name lower-cased without ERROR_KIND_, e.g. "internal") and the
// plugin's message. It unwraps to the kind's sentinel where there is one (ErrUnknownTool, the
// memory sentinels, plugin.ErrConfigInvalid, plugin.ErrUnavailable).
type CallError struct {
	Kind    string
	Message string
	err     error
}

func (e *CallError) Error() string {
	if e.Message == "" {
		return e.Kind
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Message)
}

func (e *CallError) Unwrap() error { return e.err }
