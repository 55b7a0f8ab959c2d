package conversations

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
)

// The document types below are the JSON the run doors serve (docs/api.md#runs,
// docs/api.md#tasks-and-decisions). The doors build them because their presence rules (absent,
// null and false kept apart) are this package's contract; the HTTP layer only writes them.

// RunDoc is a run document.
type RunDoc struct {
	PublicID                      string           `json:"public_id"`
	WorkspacePublicID             string           `json:"workspace_public_id"`
	ConversationPublicID          *string          `json:"conversation_public_id"`
	Turn                          *TurnRef         `json:"turn"`
	CreatedBy                     runs.Member      `json:"created_by"`
	AnsweringAgentPublicID        *string          `json:"answering_agent_public_id"`
	Status                        string           `json:"status"`
	ApprovalMode                  string           `json:"approval_mode"`
	ApprovalRules                 json.RawMessage  `json:"approval_rules"`
	DefaultRunnerExecutorPublicID *string          `json:"default_runner_executor_public_id"`
	DeliverableTaskKey            string           `json:"deliverable_task_key"`
	Revision                      int64            `json:"revision"`
	Attention                     []runs.Attention `json:"attention,omitempty"`
	TaskProgress                  map[string]int   `json:"task_progress"`
	Answer                        *string          `json:"answer"`
	Stop                          *StopDoc         `json:"stop"`
	CreatedAt                     string           `json:"created_at"`
	StartedAt                     *string          `json:"started_at"`
	CompletedAt                   *string          `json:"completed_at"`
	Tasks                         []*TaskDoc       `json:"tasks,omitempty"`
}

// TurnRef is a conversation-hosted run's turn.
type TurnRef struct {
	PublicID string `json:"public_id"`
	Position int64  `json:"position"`
	Status   string `json:"status"`
}

// StopDoc is a stop request.
type StopDoc struct {
	RequestedAt string      `json:"requested_at"`
	By          runs.Member `json:"by"`
	Force       bool        `json:"force"`
}

// TaskDoc is a task: the trace row, plus the full fields on the task read.
type TaskDoc struct {
	Key               string           `json:"key"`
	Kind              string           `json:"kind"`
	Status            string           `json:"status"`
	Mainline          bool             `json:"mainline"`
	Origin            string           `json:"origin"`
	ParentKey         *string          `json:"parent_key,omitempty"`
	DeclaringTaskKey  *string          `json:"declaring_task_key,omitempty"`
	After             []string         `json:"after,omitempty"`
	WaitingOn         []string         `json:"waiting_on,omitempty"`
	OnFailure         string           `json:"on_failure"`
	Lifetime          string           `json:"lifetime"`
	Wake              string           `json:"wake"`
	Detached          bool             `json:"detached"`
	Visibility        string           `json:"visibility"`
	FailureResolution *string          `json:"failure_resolution,omitempty"`
	Model             *string          `json:"model,omitempty"`
	Prompt            *string          `json:"prompt,omitempty"`
	Instructions      *string          `json:"instructions,omitempty"`
	Attachments       json.RawMessage  `json:"attachments,omitempty"`
	Results           json.RawMessage  `json:"results,omitempty"`
	ToolDefinitions   json.RawMessage  `json:"tool_definitions,omitempty"`
	SkillCatalog      json.RawMessage  `json:"skill_catalog,omitempty"`
	Environment       json.RawMessage  `json:"environment,omitempty"`
	Finish            *string          `json:"finish,omitempty"`
	Calls             []CallDoc        `json:"calls,omitempty"`
	Usage             json.RawMessage  `json:"usage,omitempty"`
	Attempts          *int64           `json:"attempts,omitempty"`
	RequestBytes      *int64           `json:"request_bytes,omitempty"`
	ToolName          *string          `json:"tool_name,omitempty"`
	ToolAlias         *string          `json:"tool_alias,omitempty"`
	ToolInput         *json.RawMessage `json:"tool_input,omitempty"`
	ToolCallID        *string          `json:"tool_call_id,omitempty"`
	Route             json.RawMessage  `json:"route,omitempty"`
	Target            json.RawMessage  `json:"target,omitempty"`
	AddressedTo       json.RawMessage  `json:"addressed_to,omitempty"`
	EffectProfile     json.RawMessage  `json:"effect_profile,omitempty"`
	TimeoutMS         *int64           `json:"timeout_ms,omitempty"`
	DeadlineAt        *string          `json:"deadline_at,omitempty"`
	Claim             *ClaimDoc        `json:"claim,omitempty"`
	AwaitingChild     *string          `json:"awaiting_child,omitempty"`
	ModelDefaults     json.RawMessage  `json:"model_defaults,omitempty"`
	AwaitKind         *string          `json:"await_kind,omitempty"`
	Options           json.RawMessage  `json:"options,omitempty"`
	Multi             *bool            `json:"multi,omitempty"`
	Wait              json.RawMessage  `json:"wait,omitempty"`
	ResolvedBy        json.RawMessage  `json:"resolved_by,omitempty"`
	Approval          json.RawMessage  `json:"approval,omitempty"`
	IsError           *bool            `json:"is_error,omitempty"`
	Output            *string          `json:"output,omitempty"`
	Content           json.RawMessage  `json:"content,omitempty"`
	StructuredContent *json.RawMessage `json:"structured_content,omitempty"`
	Title             *string          `json:"title,omitempty"`
	Metadata          json.RawMessage  `json:"metadata,omitempty"`
	Error             *runs.TaskError  `json:"error,omitempty"`
	CreatedAt         string           `json:"created_at"`
	ReadyAt           *string          `json:"ready_at,omitempty"`
	DispatchedAt      *string          `json:"dispatched_at,omitempty"`
	StartedAt         *string          `json:"started_at,omitempty"`
	CompletedAt       *string          `json:"completed_at,omitempty"`
	ResultDeliveredAt *string          `json:"result_delivered_at,omitempty"`
}

// CallDoc is one call of a model answer.
type CallDoc struct {
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
	TaskKey    string `json:"task_key"`
}

// ClaimDoc is a row's current claim (the token is never served).
type ClaimDoc struct {
	Generation int64           `json:"generation"`
	ClaimedBy  json.RawMessage `json:"claimed_by"`
	ClaimedAt  string          `json:"claimed_at"`
}

func raw(s *string) json.RawMessage {
	if s == nil {
		return nil
	}
	return json.RawMessage(*s)
}

// jsonOf is a typed column's value as a document serves it, the JSON the store holds for it; nil
// for SQL NULL.
func jsonOf[T any](v *T) json.RawMessage {
	if v == nil {
		return nil
	}
	return mustJSON(v)
}

// jsonList is jsonOf for a list column, nil for SQL NULL.
func jsonList[T any](v []T) json.RawMessage {
	if v == nil {
		return nil
	}
	return mustJSON(v)
}

// mustJSON encodes a value of a typed column, which always encodes.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("conversations: a stored %T does not encode: %v", v, err))
	}
	return b
}

// traceDoc is a trace row: identity and shape, model/finish, tool routing, claim, await kind,
// approval, error, deadline and timestamps (docs/api.md#runs).
func traceDoc(t *store.TaskTrace, byKey map[string]*store.TaskTrace) *TaskDoc {
	d := &TaskDoc{Key: t.Key, Kind: t.Kind, Status: t.Status, Mainline: t.Mainline, Origin: t.Origin,
		ParentKey: t.ParentKey, DeclaringTaskKey: t.DeclaringTaskKey, After: runs.AfterKeys(t), OnFailure: t.OnFailure,
		Lifetime: t.Lifetime, Wake: t.Wake, Detached: t.Detached, Visibility: t.Visibility,
		FailureResolution: t.FailureResolution, CreatedAt: store.FormatMillis(t.CreatedAt), ReadyAt: optTime(t.ReadyAt),
		DispatchedAt: optTime(t.DispatchedAt), StartedAt: optTime(t.StartedAt), CompletedAt: optTime(t.CompletedAt),
		ResultDeliveredAt: optTime(t.ResultDeliveredAt), DeadlineAt: optTime(t.DeadlineAt), AwaitKind: t.AwaitKind,
		Approval: jsonOf(t.Approval)}
	if t.Status == runs.StatusWaiting {
		for _, k := range d.After {
			if p := byKey[k]; p == nil || !runs.Terminal(p.Status) {
				d.WaitingOn = append(d.WaitingOn, k)
			}
		}
	}
	switch t.Kind {
	case runs.KindModel:
		d.Model, d.Finish = t.Model, t.Finish
	case runs.KindTool:
		d.ToolName, d.ToolAlias, d.ToolCallID, d.Target = t.ToolName, t.ToolAlias, t.ToolCallID, raw(t.Target)
		if t.AddressedRole != nil {
			to := map[string]string{"role": *t.AddressedRole}
			if t.AddressedExecutorPublicID != nil {
				to["executor_public_id"] = *t.AddressedExecutorPublicID
			}
			d.AddressedTo, _ = json.Marshal(to)
		}
		if t.ClaimedAt != nil && t.ClaimedBy != nil {
			d.Claim = &ClaimDoc{Generation: t.ClaimGeneration, ClaimedBy: jsonOf(t.ClaimedBy), ClaimedAt: store.FormatMillis(*t.ClaimedAt)}
		}
	}
	if t.ErrorKey != nil {
		d.Error = &runs.TaskError{Key: *t.ErrorKey, Detail: deref(t.ErrorDetail)}
	}
	return d
}

// fullDoc is the task read: the trace row plus every field the row has
// (docs/api.md#tasks-and-decisions).
func fullDoc(t *store.Task, byKey map[string]*store.TaskTrace) *TaskDoc {
	d := traceDoc(&t.TaskTrace, byKey)
	switch t.Kind {
	case runs.KindModel:
		d.Prompt, d.Instructions = t.Prompt, t.Instructions
		d.Attachments, d.Results = jsonList(t.Attachments), jsonList(t.Results)
		d.ToolDefinitions, d.SkillCatalog, d.Environment = raw(t.ToolDefinitions), raw(t.SkillCatalog), raw(t.Environment)
		if d.ToolDefinitions == nil {
			d.ToolDefinitions = json.RawMessage("[]")
		}
		d.Usage = jsonOf(t.Usage)
		d.Attempts, d.RequestBytes = ptr(t.Attempts), t.RequestBytes
		for _, c := range t.AnswerCalls {
			d.Calls = append(d.Calls, CallDoc{ToolCallID: c.ToolCallID, Name: c.Name, TaskKey: c.TaskKey})
		}
	case runs.KindAwait:
		// An ask shows its question and addressee, a wait its target (docs/api.md#tasks-and-decisions).
		d.Prompt, d.Options, d.Multi, d.TimeoutMS = t.Prompt, jsonList(t.Options), t.Multi, t.TimeoutMS
		d.AddressedTo, d.Wait, d.ResolvedBy = jsonOf(t.AddressedMember), jsonOf(t.WaitSpec), jsonOf(t.ResolvedBy)
	case runs.KindTool:
		in := json.RawMessage("null")
		if t.ToolInput != nil {
			in = json.RawMessage(*t.ToolInput)
		}
		d.ToolInput = &in
		d.Route, d.EffectProfile, d.TimeoutMS = jsonOf(t.Route), raw(t.EffectProfile), t.TimeoutMS
		d.AwaitingChild, d.ModelDefaults = t.AwaitingChild, raw(t.ModelDefaults)
	}
	if runs.Terminal(t.Status) {
		out := deref(t.Output)
		d.Output = &out
		if t.Kind != runs.KindModel || t.IsError != nil {
			d.IsError = ptr(deref(t.IsError))
		}
	}
	d.Content = raw(t.Content)
	if t.StructuredContent != nil {
		sc := json.RawMessage(*t.StructuredContent)
		d.StructuredContent = &sc
	}
	d.Title, d.Metadata = t.Title, raw(t.Metadata)
	return d
}

// runDoc builds a run document; withTasks adds the trace rows.
func runDoc(ctx context.Context, q store.Querier, r *store.Run, withTasks bool) (*RunDoc, error) {
	tasks, err := store.TraceTasks(ctx, q, r.ID)
	if err != nil {
		return nil, err
	}
	return runDocOf(ctx, q, r, tasks, withTasks)
}

// runDocOf is runDoc over tasks, the run's every row in id order, which the caller holds
// current.
func runDocOf(ctx context.Context, q store.Querier, r *store.Run, tasks []store.TaskTrace, withTasks bool) (*RunDoc, error) {
	byKey := make(map[string]*store.TaskTrace, len(tasks))
	for i := range tasks {
		byKey[tasks[i].Key] = &tasks[i]
	}
	d := &RunDoc{PublicID: r.PublicID, WorkspacePublicID: r.WorkspacePublicID, ConversationPublicID: r.ConversationPublicID,
		CreatedBy: runs.Member{Kind: r.CreatedByKind, PublicID: r.CreatedByPublicID}, AnsweringAgentPublicID: r.AnsweringAgentPublicID,
		Status: r.Status, ApprovalMode: r.ApprovalMode, ApprovalRules: json.RawMessage(r.ApprovalRules),
		DefaultRunnerExecutorPublicID: r.DefaultRunnerExecutorPublicID, DeliverableTaskKey: r.DeliverableTaskKey,
		Revision: r.Revision, Answer: r.Answer, CreatedAt: store.FormatMillis(r.CreatedAt), StartedAt: optTime(r.StartedAt),
		CompletedAt: optTime(r.CompletedAt), TaskProgress: map[string]int{"total": len(tasks)}}
	for _, s := range runs.TaskStatuses() {
		d.TaskProgress[s] = 0
	}
	for i := range tasks {
		d.TaskProgress[tasks[i].Status]++
	}
	if r.StopRequestedAt != nil {
		d.Stop = &StopDoc{RequestedAt: store.FormatMillis(*r.StopRequestedAt), By: runs.Member{Kind: deref(r.StopByKind), PublicID: deref(r.StopByPublicID)}, Force: deref(r.StopForce)}
	}
	d.Attention = runs.AttentionOf(r, tasks, byKey)
	if r.ConversationID != nil {
		t, err := store.TurnOfRun(ctx, q, r.ID)
		if err != nil {
			return nil, err
		}
		d.Turn = &TurnRef{PublicID: t.PublicID, Position: t.Position, Status: t.Status}
	}
	if withTasks {
		for i := range tasks {
			d.Tasks = append(d.Tasks, traceDoc(&tasks[i], byKey))
		}
		if d.Tasks == nil {
			d.Tasks = []*TaskDoc{}
		}
	}
	return d, nil
}
