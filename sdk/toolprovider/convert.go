package toolprovider

import (
	"encoding/json"
	"math"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/nexuskernel/nexus/sdk/internal/pb/nexus/plugin/v1"
	"github.com/nexuskernel/nexus/sdk/memory"
)

// Converters between Call/Result and the generated types: pure functions; only this file and
// the shims beside it see a generated type.

func timeToProto(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func timeFromProto(t *timestamppb.Timestamp) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.AsTime().UTC()
}

// memoryScopeToProto mirrors sdk/memory's own converter for the scopes a memory-named call
// carries (the memory package keeps its converters unexported, so no generated type leaves it).
func memoryScopeToProto(s memory.Scope) *pb.Scope {
	kinds := map[memory.ScopeKind]pb.ScopeKind{
		memory.ScopeConversation: pb.ScopeKind_SCOPE_KIND_CONVERSATION,
		memory.ScopeWorkspace:    pb.ScopeKind_SCOPE_KIND_WORKSPACE,
		memory.ScopeUser:         pb.ScopeKind_SCOPE_KIND_USER,
	}
	access := map[memory.Access]pb.Access{memory.AccessRead: pb.Access_ACCESS_READ, memory.AccessReadWrite: pb.Access_ACCESS_READ_WRITE}
	return &pb.Scope{Binding: s.Binding, Kind: kinds[s.Kind], OwnerPublicId: s.OwnerID, Access: access[s.Access], WorkspacePublicId: s.WorkspaceID}
}

func memoryScopeFromProto(s *pb.Scope) memory.Scope {
	kinds := map[pb.ScopeKind]memory.ScopeKind{
		pb.ScopeKind_SCOPE_KIND_CONVERSATION: memory.ScopeConversation,
		pb.ScopeKind_SCOPE_KIND_WORKSPACE:    memory.ScopeWorkspace,
		pb.ScopeKind_SCOPE_KIND_USER:         memory.ScopeUser,
	}
	access := map[pb.Access]memory.Access{pb.Access_ACCESS_READ: memory.AccessRead, pb.Access_ACCESS_READ_WRITE: memory.AccessReadWrite}
	return memory.Scope{Binding: s.GetBinding(), Kind: kinds[s.GetKind()], OwnerID: s.GetOwnerPublicId(), Access: access[s.GetAccess()], WorkspaceID: s.GetWorkspacePublicId()}
}

func callToProto(c Call) *pb.CallRequest {
	scope := &pb.CallScope{
		WorkspacePublicId: c.Scope.WorkspaceID, ConversationPublicId: c.Scope.ConversationID,
		RunPublicId: c.Scope.RunID, TaskKey: c.Scope.TaskKey, ToolCallId: c.Scope.ToolCallID, ToolAlias: c.Scope.ToolAlias,
	}
	for _, s := range c.Scope.MemoryBindings {
		scope.MemoryScopes = append(scope.MemoryScopes, memoryScopeToProto(s))
	}
	return &pb.CallRequest{
		ToolName: c.Tool, InputJson: c.Input, Scope: scope, Deadline: timeToProto(c.Deadline),
		Claim: &pb.ClaimInfo{
			ExecutorPublicId: c.Claim.ExecutorID, ClaimedAt: timeToProto(c.Claim.ClaimedAt),
			Attempt: uint32(min(max(c.Claim.Attempt, 0), math.MaxUint32)),
		},
	}
}

func callFromProto(r *pb.CallRequest) Call {
	s := r.GetScope()
	c := Call{
		Tool: r.GetToolName(), Deadline: timeFromProto(r.GetDeadline()),
		Scope: CallScope{
			WorkspaceID: s.GetWorkspacePublicId(), ConversationID: s.GetConversationPublicId(),
			RunID: s.GetRunPublicId(), TaskKey: s.GetTaskKey(), ToolCallID: s.GetToolCallId(), ToolAlias: s.GetToolAlias(),
		},
		Claim: ClaimInfo{
			ExecutorID: r.GetClaim().GetExecutorPublicId(), ClaimedAt: timeFromProto(r.GetClaim().GetClaimedAt()),
			Attempt: int(r.GetClaim().GetAttempt()),
		},
	}
	c.Claim.Replay = c.Claim.Attempt > 1
	if len(r.GetInputJson()) > 0 {
		c.Input = json.RawMessage(r.GetInputJson())
	}
	for _, ms := range s.GetMemoryScopes() {
		c.Scope.MemoryBindings = append(c.Scope.MemoryBindings, memoryScopeFromProto(ms))
	}
	return c
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func linkToProto(l *ResourceLink) *pb.ResourceLink {
	out := &pb.ResourceLink{Uri: l.URI, Name: l.Name, MimeType: optString(l.MimeType), Title: optString(l.Title), Description: optString(l.Description)}
	if l.Size > 0 {
		size := uint64(l.Size)
		out.Size = &size
	}
	return out
}

func linkFromProto(l *pb.ResourceLink) *ResourceLink {
	return &ResourceLink{
		URI: l.GetUri(), Name: l.GetName(), MimeType: l.GetMimeType(), Size: int64(min(l.GetSize(), math.MaxInt64)),
		Title: l.GetTitle(), Description: l.GetDescription(),
	}
}

// resultToProto converts a completed call's result. Blocks win over Text; a block with neither
// text nor link travels as an empty block, which the commit grammar refuses as invalid_content.
func resultToProto(r Result) *pb.CallResponse {
	out := &pb.CallResponse{IsError: r.IsError, Outcome: pb.Outcome_OUTCOME_COMPLETED, Title: optString(r.Title), MetadataJson: r.Metadata}
	switch {
	case r.Blocks != nil:
		blocks := &pb.ContentBlocks{}
		for _, b := range r.Blocks {
			pbb := &pb.ContentBlock{}
			switch {
			case b.Text != nil:
				pbb.Block = &pb.ContentBlock_Text{Text: &pb.TextBlock{Text: *b.Text}}
			case b.Link != nil:
				pbb.Block = &pb.ContentBlock_ResourceLink{ResourceLink: linkToProto(b.Link)}
			}
			blocks.Blocks = append(blocks.Blocks, pbb)
		}
		out.Content = &pb.CallResponse_Blocks{Blocks: blocks}
	case r.Text != "":
		out.Content = &pb.CallResponse_Text{Text: r.Text}
	}
	if r.Structured != nil {
		out.StructuredContentJson = append([]byte(nil), r.Structured...)
	}
	for _, c := range r.Captures {
		out.Captures = append(out.Captures, &pb.Capture{Ref: c.Ref, Filename: c.Filename, Data: c.Data})
	}
	return out
}

// failedToProto is a call that could not run, with the tool's own detail.
func failedToProto(detail string) *pb.CallResponse {
	return &pb.CallResponse{Outcome: pb.Outcome_OUTCOME_FAILED, FailureDetail: detail}
}

// resultFromProto reads a response; OUTCOME_FAILED answers a *FailedError instead of a Result.
func resultFromProto(r *pb.CallResponse) (Result, error) {
	if r.GetOutcome() == pb.Outcome_OUTCOME_FAILED {
		return Result{}, &FailedError{Detail: r.GetFailureDetail()}
	}
	out := Result{IsError: r.GetIsError(), Title: r.GetTitle()}
	switch c := r.GetContent().(type) {
	case *pb.CallResponse_Text:
		out.Text = c.Text
	case *pb.CallResponse_Blocks:
		out.Blocks = []Block{}
		for _, b := range c.Blocks.GetBlocks() {
			switch bb := b.GetBlock().(type) {
			case *pb.ContentBlock_Text:
				out.Blocks = append(out.Blocks, TextBlock(bb.Text.GetText()))
			case *pb.ContentBlock_ResourceLink:
				out.Blocks = append(out.Blocks, Block{Link: linkFromProto(bb.ResourceLink)})
			default:
				out.Blocks = append(out.Blocks, Block{})
			}
		}
	}
	if r.StructuredContentJson != nil {
		out.Structured = json.RawMessage(append([]byte(nil), r.GetStructuredContentJson()...))
	}
	if len(r.GetMetadataJson()) > 0 {
		out.Metadata = json.RawMessage(append([]byte(nil), r.GetMetadataJson()...))
	}
	for _, c := range r.GetCaptures() {
		out.Captures = append(out.Captures, Capture{Ref: c.GetRef(), Filename: c.GetFilename(), Data: c.GetData()})
	}
	return out, nil
}
