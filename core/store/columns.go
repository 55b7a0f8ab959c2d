package store

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
)

// The JSON-valued columns of a task row whose shape the engine reads are Go types on the row
// (docs/development.md#how-a-door-reaches-the-store): the store encodes a value as it binds it
// and decodes it once as it scans the row, and a stored value that does not decode fails the read
// that met it. An optional one is a pointer, or a nil slice, for SQL NULL. The documents the row
// carries whole for another package (the frozen declaration, a tool's input, a result's content
// blocks, which core/envelope decodes) stay their stored text.

// Strings is a JSON array of strings: the keys a row waits on (after_keys), the keys whose
// results a model step reads (results), an ask's options. nil is SQL NULL; an empty, non-nil
// list is stored as [].
type Strings []string

// Scan decodes a stored array.
func (s *Strings) Scan(src any) error { return scanJSON(src, (*[]string)(s)) }

// Value encodes s, SQL NULL for nil.
func (s Strings) Value() (driver.Value, error) {
	if s == nil {
		return nil, nil
	}
	return jsonValue([]string(s))
}

// Member names a member, a person or an agent (or the kernel, with no public id), as a row
// stores it: an approval's decider, an await's resolver, an ask's addressee.
type Member struct {
	Kind     string `json:"kind"`
	PublicID string `json:"public_id,omitempty"`
}

// Scan decodes a stored member.
func (m *Member) Scan(src any) error { return scanJSON(src, m) }

// Value encodes m.
func (m Member) Value() (driver.Value, error) { return jsonValue(m) }

// Claimant is a row's claimant (claimed_by): the kernel, or an executor by its public id.
type Claimant struct {
	Kernel           bool   `json:"kernel,omitempty"`
	ExecutorPublicID string `json:"executor_public_id,omitempty"`
}

// KernelClaimant is the claimant of a kernel claim.
var KernelClaimant = Claimant{Kernel: true}

// ExecutorClaimant is the claimant of an executor's claim.
func ExecutorClaimant(publicID string) Claimant { return Claimant{ExecutorPublicID: publicID} }

// Executor is the executor c names, "" for the kernel or for no claimant (nil).
func (c *Claimant) Executor() string {
	if c == nil {
		return ""
	}
	return c.ExecutorPublicID
}

// Scan decodes a stored claimant.
func (c *Claimant) Scan(src any) error { return scanJSON(src, c) }

// Value encodes c.
func (c Claimant) Value() (driver.Value, error) { return jsonValue(c) }

// Approval is a row's approval record (docs/agent-tools.md#the-approval-gate).
type Approval struct {
	Origin    string  `json:"origin"`
	DecidedBy *Member `json:"decided_by,omitempty"`
	DecidedAt string  `json:"decided_at"`
}

// Scan decodes a stored record.
func (a *Approval) Scan(src any) error { return scanJSON(src, a) }

// Value encodes a.
func (a Approval) Value() (driver.Value, error) { return jsonValue(a) }

// WaitSpec is a wait await's target and clock (wait_spec), as the task read serves it
// (docs/api.md#tasks-and-decisions).
type WaitSpec struct {
	RunPublicID string `json:"run_public_id"`
	Task        string `json:"task"`
	TimeoutMS   int64  `json:"timeout_ms"`
}

// Scan decodes a stored spec.
func (w *WaitSpec) Scan(src any) error { return scanJSON(src, w) }

// Value encodes w.
func (w WaitSpec) Value() (driver.Value, error) { return jsonValue(w) }

// AddressedMember is an ask's addressee as stored and served: {role: "member", member}. The
// inbox finds a member's asks by the stored bytes, so it is always encoded the same way.
type AddressedMember struct {
	Role   string `json:"role"`
	Member Member `json:"member"`
}

// Scan decodes a stored addressee.
func (a *AddressedMember) Scan(src any) error { return scanJSON(src, a) }

// Value encodes a.
func (a AddressedMember) Value() (driver.Value, error) { return jsonValue(a) }

// Route is a tool row's explicit route (docs/api.md#runs): the Runner a declaration routed the
// call to.
type Route struct {
	Kind                   string `json:"kind"`
	RunnerExecutorPublicID string `json:"runner_executor_public_id"`
	ToolName               string `json:"tool_name,omitempty"`
}

// Scan decodes a stored route.
func (r *Route) Scan(src any) error { return scanJSON(src, r) }

// Value encodes r.
func (r Route) Value() (driver.Value, error) { return jsonValue(r) }

// Attachment is an input upload as a turn or a model step keeps it: the upload descriptor's
// fields a model request needs, frozen when the input was accepted.
type Attachment struct {
	PublicID    string `json:"public_id"`
	URI         string `json:"uri"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	ByteSize    int64  `json:"byte_size"`
	SHA256      string `json:"sha256"`
}

// Attachments is a model step's input uploads (attachments). nil is SQL NULL.
type Attachments []Attachment

// Scan decodes stored attachments.
func (a *Attachments) Scan(src any) error { return scanJSON(src, (*[]Attachment)(a)) }

// Value encodes a, SQL NULL for nil.
func (a Attachments) Value() (driver.Value, error) {
	if a == nil {
		return nil, nil
	}
	return jsonValue([]Attachment(a))
}

// AnswerCall is one call of a model round's answer as the round stores it (answer_calls): the
// provider's call, the pairing key its result is delivered under, and the row it became.
type AnswerCall struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Arguments  string `json:"arguments"`
	ToolCallID string `json:"tool_call_id"`
	TaskKey    string `json:"task_key"`
}

// AnswerCalls is a model round's calls. nil is SQL NULL (an answer without calls).
type AnswerCalls []AnswerCall

// Scan decodes stored calls.
func (c *AnswerCalls) Scan(src any) error { return scanJSON(src, (*[]AnswerCall)(c)) }

// Value encodes c, SQL NULL for nil.
func (c AnswerCalls) Value() (driver.Value, error) {
	if c == nil {
		return nil, nil
	}
	return jsonValue([]AnswerCall(c))
}

// Usage is a model round's usage (docs/providers.md): the counts the provider reported, the
// cache counts when it reports them, and the cost when the model is priced.
type Usage struct {
	InputTokens           int64  `json:"input_tokens"`
	OutputTokens          int64  `json:"output_tokens"`
	CachedInputTokens     *int64 `json:"cached_input_tokens,omitempty"`
	CacheWriteInputTokens *int64 `json:"cache_write_input_tokens,omitempty"`
	Estimated             bool   `json:"estimated,omitempty"`
	Cost                  *Cost  `json:"cost,omitempty"`
}

// Cost is a usage's price: a decimal string with 6 places and its currency.
type Cost struct {
	Amount   string `json:"amount"`
	Currency string `json:"currency"`
}

// Scan decodes a stored usage.
func (u *Usage) Scan(src any) error { return scanJSON(src, u) }

// Value encodes u.
func (u Usage) Value() (driver.Value, error) { return jsonValue(u) }

// scanJSON decodes a stored JSON value into dst; SQL NULL leaves dst its zero value.
func scanJSON[T any](src any, dst *T) error {
	var b []byte
	switch v := src.(type) {
	case nil:
		var zero T
		*dst = zero
		return nil
	case []byte:
		b = v
	case string:
		b = []byte(v)
	default:
		return fmt.Errorf("store: a JSON column holds a %T", src)
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("store: a stored %T does not decode: %w", v, err)
	}
	*dst = v
	return nil
}

// jsonValue is v's stored text.
func jsonValue(v any) (driver.Value, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}
