package kernel

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
)

// The conversation family's canonical and wire names
// (docs/agent-tools.md#delegation-and-conversations).
const (
	CanonicalSpawn  = "nexus.conversation.spawn"
	CanonicalSend   = "nexus.conversation.send"
	CanonicalStatus = "nexus.conversation.status"
	CanonicalCancel = "nexus.conversation.cancel"

	wireSpawn  = "spawn"
	wireSend   = "send"
	wireStatus = "status"
	wireCancel = "cancel"
)

// The parameters of each tool, in schema order (docs/agent-tools.md#delegation-and-conversations).
var (
	spawnParams  = []string{"prompt", "agent", "label", "lifetime", "wake", "wait", "default_runner_executor_public_id", "model"}
	sendParams   = []string{"to", "agent", "message", "steer", "deliver_in", "deliver_at", "wake", "model"}
	statusParams = []string{"to"}
	cancelParams = []string{"to"}
)

// Argument grammars of the conversation tools (docs/agent-tools.md#delegation-and-conversations).
var (
	labelPattern     = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	deliverInPattern = regexp.MustCompile(`^[1-9][0-9]*[smhd]$`)
	// deliverAtPattern is RFC 3339 with an explicit offset: Z, +hh:mm or -hh:mm.
	deliverAtPattern = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$`)
)

// The invalid_arguments sentences the conversation tools add to the shared ones.
const (
	sentenceLabel          = "label must be 1 to 64 lowercase letters, digits, _ or -, starting with a letter or digit."
	sentenceDeliverIn      = "deliver_in must be a whole number followed by s, m, h or d, such as 90s."
	sentenceDeliverAt      = "deliver_at must be an ISO 8601 time with a UTC offset."
	sentenceOneSchedule    = "use at most one of deliver_in and deliver_at."
	sentenceScheduleNSteer = "deliver_in and deliver_at cannot be used with steer."
)

// Conversation runs spawn, send, status and cancel
// (docs/agent-tools.md#delegation-and-conversations): it checks the arguments and writes the texts;
// core/runs resolves addressees and writes the rows inside the call's settling transaction.
type Conversation struct{}

// NoConversationDetail is the detail of a conversation tool called on a standalone run.
func NoConversationDetail(wire string) string {
	return wire + " needs a conversation; this run has none."
}

// hosted answers no_conversation on a standalone run
// (docs/agent-tools.md#delegation-and-conversations), or an error when the call has no engine
// behind it.
func hosted(call *runs.KernelCall, wire string) (*runs.KernelOutcome, error) {
	if call.Engine == nil {
		return nil, fmt.Errorf("kernel: %s needs the run engine", wire)
	}
	if !conversations.On(call.Engine).Hosted() {
		return ErrorResult(wire, conversations.WordNoConversation, NoConversationDetail(wire)), nil
	}
	return nil, nil
}

func refusedWith(wire string, rf *refusal.Error) *runs.KernelOutcome {
	return ErrorResult(wire, rf.Code, rf.Message)
}

// SpawnStillWorkingText is a waited spawn's result when its await expired or was canceled
// before the reply (docs/agent-tools.md#delegation-and-conversations): only the waiting ended.
func SpawnStillWorkingText(conversationPublicID, label, answeredBy string) string {
	return SpawnedLine(conversationPublicID, label, answeredBy) + ".\n" +
		"(the conversation is still working; its reply will reach you later in a message that is not from the person)"
}

// SpawnedLine is the opening of a spawn's texts, without its ending:
// `Spawned conversation <id> (label "<label>"), answered by @<handle>`.
func SpawnedLine(conversationPublicID, label, answeredBy string) string {
	s := "Spawned conversation " + conversationPublicID
	if label != "" {
		s += fmt.Sprintf(" (label %q)", label)
	}
	return s + ", answered by " + answeredBy
}

// SpawnTitle is a spawn call's title: `spawned <label>`, or `spawned <conversation id>`.
func SpawnTitle(conversationPublicID, label string) string {
	if label != "" {
		return "spawned " + label
	}
	return "spawned " + conversationPublicID
}

// SpawnReceipt is a detached spawn's result text
// (docs/agent-tools.md#delegation-and-conversations).
func SpawnReceipt(conversationPublicID, label, answeredBy, callKey, runPublicID string) string {
	return SpawnedLine(conversationPublicID, label, answeredBy) + ", in the background. Its reply will reach you later as a <task_result task=\"" +
		callKey + "\" conversation=\"" + conversationPublicID + "\"> message, which is not from the person.\n" + TaskReference(runPublicID, callKey)
}

// Spawn runs spawn (docs/agent-tools.md#delegation-and-conversations): no_conversation; the
// argument shapes; then the answerer, the messaging policy, the label, the Runner and the model, in
// that order; then the child conversation, its brief and the rows that carry the reply back.
func (cv *Conversation) Spawn(ctx context.Context, call *runs.KernelCall) (*runs.KernelOutcome, error) {
	if out, err := hosted(call, wireSpawn); out != nil || err != nil {
		return out, err
	}
	a, err := ReadArgs(call.Input, spawnParams, true)
	if err != nil {
		return nil, err
	}
	prompt, _ := a.String("prompt", true, true)
	agent, _ := a.HandleOrUUID("agent", false)
	label, hasLabel := a.String("label", false, false)
	if hasLabel {
		label = strings.ToLower(label)
		if !labelPattern.MatchString(label) {
			a.fail(sentenceLabel)
		}
	}
	lifetime := a.Enum("lifetime", false, "", lifetimeTurn, lifetimeConversation)
	wake := a.Enum("wake", false, "", wakeAuto, wakePassive)
	wait := a.Bool("wait", false, false)
	runner, runnerSet, runnerNull := a.StringOrNull("default_runner_executor_public_id")
	if runnerSet && !runnerNull && !uuidLike(runner) {
		a.fail("default_runner_executor_public_id must be a UUID.")
	}
	requested, _ := a.String("model", false, false)
	if e := a.Err(); e != nil {
		return argumentsRefused(wireSpawn, e), nil
	}
	round, err := callingRound(ctx, call)
	if err != nil {
		return nil, err
	}
	if lifetime == "" {
		lifetime = round.Lifetime
	}
	if wake == "" {
		wake = round.Wake
	}
	sp := &conversations.SpawnSpec{Prompt: prompt, Agent: agent, Label: label, Lifetime: lifetime, Wake: wake, Wait: wait,
		Runner: runner, RunnerSet: runnerSet, RunnerNull: runnerNull, Model: strings.TrimSpace(requested), RoundModel: round.Model}
	sp.Lifetime, sp.Wake = orDefault(sp.Lifetime, runs.LifetimeConversation), orDefault(sp.Wake, runs.WakeAuto)
	got, rf, err := conversations.On(call.Engine).Spawn(ctx, call.TaskKey, sp)
	if err != nil {
		return nil, err
	}
	if rf != nil {
		return refusedWith(wireSpawn, rf), nil
	}
	title := SpawnTitle(got.ConversationPublicID, got.Label)
	if wait {
		return &runs.KernelOutcome{Place: &runs.Placement{Rows: got.Rows, Await: runs.ChildKey(call.TaskKey, runs.RoleSpawn, 1), Title: title}}, nil
	}
	var lbl *string
	if got.Label != "" {
		lbl = &got.Label
	}
	sc, err := compactJSON(runs.SpawnStructured{ConversationPublicID: got.ConversationPublicID, Label: lbl, AnsweredBy: got.AnsweredBy,
		RunPublicID: call.RunPublicID, Task: call.TaskKey, Wait: false})
	if err != nil {
		return nil, err
	}
	res := &runs.KernelResult{Content: SpawnReceipt(got.ConversationPublicID, got.Label, got.AnsweredBy, call.TaskKey, call.RunPublicID),
		StructuredContent: sc, Title: title}
	if len(got.Rows) == 0 {
		return &runs.KernelOutcome{Result: res}, nil
	}
	return &runs.KernelOutcome{Place: &runs.Placement{Rows: got.Rows}, Result: res}, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// uuidLike is the shape a UUID argument must have: a public id in either case, since a model
// may write one in upper case (docs/api.md#conventions); the runs engine lowers it before use.
func uuidLike(s string) bool {
	return store.IsPublicID(strings.ToLower(s))
}

// callingRound reads the round that made the call; a call no round made (none in this
// version) reads the conversation defaults.
func callingRound(ctx context.Context, call *runs.KernelCall) (*runs.CallingRound, error) {
	if call.Round == nil {
		return &runs.CallingRound{Lifetime: runs.LifetimeConversation, Wake: runs.WakeAuto}, nil
	}
	return call.Round(ctx)
}

// SendReceipt is a send's one-line result (docs/agent-tools.md#delegation-and-conversations).
func SendReceipt(conversationPublicID, forHandle, delivery string, deliverAt *int64) string {
	s := "Sent to " + conversationPublicID
	if forHandle != "" {
		s += ", for " + forHandle
	}
	switch delivery {
	case conversations.DeliveryScheduled:
		return s + " (scheduled for " + textTime(*deliverAt) + ")."
	case conversations.DeliverySteering:
		return s + " (steering)."
	}
	return s + " (queued)."
}

// textTimeLayout is the timestamp form of the tools' result texts and history answers: RFC 3339
// in UTC with seconds precision and Z, what a model reads (docs/agent-tools.md).
const textTimeLayout = "2006-01-02T15:04:05Z"

// textTime is a stored time in textTimeLayout.
func textTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format(textTimeLayout)
}

// SendTitle is a send call's title: the to value as given.
func SendTitle(to string) string { return "sent to " + to }

type sendStructured struct {
	ConversationPublicID string  `json:"conversation_public_id"`
	InputPublicID        string  `json:"input_public_id"`
	Delivery             string  `json:"delivery"`
	DeliverAt            *string `json:"deliver_at"`
}

// Send runs send (docs/agent-tools.md#delegation-and-conversations): no_conversation; the argument
// shapes and their combinations; then to, agent, the messaging policy, model and the input door, in
// that order. deliver_in is resolved to an absolute time here, at first acceptance; a replayed call
// answers its first receipt.
func (cv *Conversation) Send(ctx context.Context, call *runs.KernelCall) (*runs.KernelOutcome, error) {
	if out, err := hosted(call, wireSend); out != nil || err != nil {
		return out, err
	}
	a, err := ReadArgs(call.Input, sendParams, true)
	if err != nil {
		return nil, err
	}
	to, _ := a.String("to", true, true)
	agent, _ := a.HandleOrUUID("agent", false)
	message, _ := a.String("message", true, true)
	steer := a.Bool("steer", false, false)
	deliverIn, hasIn := a.String("deliver_in", false, false)
	if hasIn && !deliverInPattern.MatchString(deliverIn) {
		a.fail(sentenceDeliverIn)
	}
	deliverAt, hasAt := a.String("deliver_at", false, false)
	var at time.Time
	if hasAt {
		t, perr := time.Parse(time.RFC3339Nano, strings.ToUpper(deliverAt))
		if !deliverAtPattern.MatchString(deliverAt) || perr != nil {
			a.fail(sentenceDeliverAt)
		}
		at = t
	}
	wake := a.Enum("wake", false, "", wakeAuto, wakePassive)
	requested, _ := a.String("model", false, false)
	switch {
	case hasIn && hasAt:
		a.fail(sentenceOneSchedule)
	case steer && (hasIn || hasAt):
		a.fail(sentenceScheduleNSteer)
	}
	if e := a.Err(); e != nil {
		return argumentsRefused(wireSend, e), nil
	}
	round, err := callingRound(ctx, call)
	if err != nil {
		return nil, err
	}
	sp := &conversations.SendSpec{To: to, Agent: agent, Message: message, Steer: steer, Wake: orDefault(orDefault(wake, round.Wake), runs.WakeAuto),
		Model: strings.TrimSpace(requested), RoundModel: round.Model}
	switch {
	case hasIn:
		sp.DeliverAt = conversations.On(call.Engine).Now().Add(parseDelay(deliverIn)).UnixMilli()
	case hasAt:
		sp.DeliverAt = at.UnixMilli()
	}
	got, rf, err := conversations.On(call.Engine).Send(ctx, call.TaskKey, sp)
	if err != nil {
		return nil, err
	}
	if rf != nil {
		return refusedWith(wireSend, rf), nil
	}
	st := sendStructured{ConversationPublicID: got.ConversationPublicID, InputPublicID: got.InputPublicID, Delivery: got.Delivery}
	if got.DeliverAt != nil {
		s := textTime(*got.DeliverAt)
		st.DeliverAt = &s
	}
	sc, err := compactJSON(st)
	if err != nil {
		return nil, err
	}
	res := &runs.KernelResult{Content: SendReceipt(got.ConversationPublicID, got.For, got.Delivery, got.DeliverAt), StructuredContent: sc,
		Title: SendTitle(to)}
	if len(got.Rows) == 0 {
		return &runs.KernelOutcome{Result: res}, nil
	}
	return &runs.KernelOutcome{Place: &runs.Placement{Rows: got.Rows}, Result: res}, nil
}

// parseDelay reads a deliver_in value the pattern already accepted. A count too large for a
// duration saturates, and the input door then refuses it schedule_out_of_range.
func parseDelay(s string) time.Duration {
	unit := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}[s[len(s)-1]]
	n, err := strconv.ParseInt(s[:len(s)-1], 10, 64)
	if err != nil || n > int64(conversations.MaxScheduleAhead/unit)+1 {
		return conversations.MaxScheduleAhead + unit
	}
	return time.Duration(n) * unit
}

// StatusText is status's result (docs/agent-tools.md#delegation-and-conversations): the first line
// always, the second only when messages from that conversation wait in the caller's queue.
func StatusText(st *conversations.ConversationState) string {
	state := "idle"
	if st.Running {
		state = "running"
	}
	s := fmt.Sprintf("Conversation %s: %s; queue: %d waiting; answered by %s.", st.PublicID, state, st.Queued, st.AnsweredBy)
	switch {
	case st.WaitingForYou == 1:
		s += "\n1 message from it waits for you, delivered when you end your turn."
	case st.WaitingForYou > 1:
		s += fmt.Sprintf("\n%d messages from it wait for you, delivered when you end your turn.", st.WaitingForYou)
	}
	return s
}

// StatusTitle is a status call's title.
func StatusTitle(to string) string { return "status of " + to }

// Status runs status (docs/agent-tools.md#delegation-and-conversations).
func (cv *Conversation) Status(ctx context.Context, call *runs.KernelCall) (*runs.KernelOutcome, error) {
	if out, err := hosted(call, wireStatus); out != nil || err != nil {
		return out, err
	}
	a, err := ReadArgs(call.Input, statusParams, true)
	if err != nil {
		return nil, err
	}
	to, _ := a.String("to", true, true)
	if e := a.Err(); e != nil {
		return argumentsRefused(wireStatus, e), nil
	}
	target, rf, err := conversations.On(call.Engine).Resolve(ctx, to, conversations.AddressStatus)
	if err != nil {
		return nil, err
	}
	if rf != nil {
		return refusedWith(wireStatus, rf), nil
	}
	st, err := conversations.On(call.Engine).State(ctx, target)
	if err != nil {
		return nil, err
	}
	state := "idle"
	if st.Running {
		state = "running"
	}
	sc, err := compactJSON(struct {
		ConversationPublicID string `json:"conversation_public_id"`
		State                string `json:"state"`
		Queued               int    `json:"queued"`
		AnsweredBy           string `json:"answered_by"`
		WaitingForYou        int    `json:"waiting_for_you"`
	}{st.PublicID, state, st.Queued, st.AnsweredBy, st.WaitingForYou})
	if err != nil {
		return nil, err
	}
	return &runs.KernelOutcome{Result: &runs.KernelResult{Content: StatusText(st), StructuredContent: sc, Title: StatusTitle(to)}}, nil
}

// CancelText is cancel's result (docs/agent-tools.md#delegation-and-conversations); neither form is
// an error.
func CancelText(conversationPublicID string, canceled bool) string {
	if canceled {
		return "Canceled the work this run started in conversation " + conversationPublicID + "."
	}
	return "Nothing to cancel: this run has no unfinished work in conversation " + conversationPublicID + "."
}

// CancelTitle is a cancel call's title.
func CancelTitle(to string) string { return "canceled work in " + to }

// Cancel runs cancel (docs/agent-tools.md#delegation-and-conversations): the addressee needs write
// standing, and an ancestor is refused; a second cancel finds nothing left.
func (cv *Conversation) Cancel(ctx context.Context, call *runs.KernelCall) (*runs.KernelOutcome, error) {
	if out, err := hosted(call, wireCancel); out != nil || err != nil {
		return out, err
	}
	a, err := ReadArgs(call.Input, cancelParams, true)
	if err != nil {
		return nil, err
	}
	to, _ := a.String("to", true, true)
	if e := a.Err(); e != nil {
		return argumentsRefused(wireCancel, e), nil
	}
	target, rf, err := conversations.On(call.Engine).Resolve(ctx, to, conversations.AddressCancel)
	if err != nil {
		return nil, err
	}
	if rf != nil {
		return refusedWith(wireCancel, rf), nil
	}
	canceled, err := conversations.On(call.Engine).Cancel(ctx, target)
	if err != nil {
		return nil, err
	}
	sc, err := compactJSON(struct {
		ConversationPublicID string `json:"conversation_public_id"`
		Canceled             bool   `json:"canceled"`
	}{target.PublicID, canceled})
	if err != nil {
		return nil, err
	}
	return &runs.KernelOutcome{Result: &runs.KernelResult{Content: CancelText(target.PublicID, canceled), StructuredContent: sc,
		Title: CancelTitle(to)}}, nil
}
