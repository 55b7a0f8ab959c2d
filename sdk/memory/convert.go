package memory

import (
	"math"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/nexuskernel/nexus/sdk/internal/pb/nexus/plugin/v1"
)

// Converters between the plain types and the generated ones. They are pure functions, and only
// this file and the shims beside it see a generated type. A value the wire cannot name (an
// unknown scope kind or access) travels as UNSPECIFIED and comes back as "", which ValidScope
// refuses on the far side exactly as it would have here.

func scopeKindToProto(k ScopeKind) pb.ScopeKind {
	switch k {
	case ScopeConversation:
		return pb.ScopeKind_SCOPE_KIND_CONVERSATION
	case ScopeWorkspace:
		return pb.ScopeKind_SCOPE_KIND_WORKSPACE
	case ScopeUser:
		return pb.ScopeKind_SCOPE_KIND_USER
	}
	return pb.ScopeKind_SCOPE_KIND_UNSPECIFIED
}

func scopeKindFromProto(k pb.ScopeKind) ScopeKind {
	switch k {
	case pb.ScopeKind_SCOPE_KIND_CONVERSATION:
		return ScopeConversation
	case pb.ScopeKind_SCOPE_KIND_WORKSPACE:
		return ScopeWorkspace
	case pb.ScopeKind_SCOPE_KIND_USER:
		return ScopeUser
	}
	return ""
}

func accessToProto(a Access) pb.Access {
	switch a {
	case AccessRead:
		return pb.Access_ACCESS_READ
	case AccessReadWrite:
		return pb.Access_ACCESS_READ_WRITE
	}
	return pb.Access_ACCESS_UNSPECIFIED
}

func accessFromProto(a pb.Access) Access {
	switch a {
	case pb.Access_ACCESS_READ:
		return AccessRead
	case pb.Access_ACCESS_READ_WRITE:
		return AccessReadWrite
	}
	return ""
}

func scopeToProto(s Scope) *pb.Scope {
	return &pb.Scope{
		Binding: s.Binding, Kind: scopeKindToProto(s.Kind), OwnerPublicId: s.OwnerID,
		Access: accessToProto(s.Access), WorkspacePublicId: s.WorkspaceID,
	}
}

func scopeFromProto(s *pb.Scope) Scope {
	return Scope{
		Binding: s.GetBinding(), Kind: scopeKindFromProto(s.GetKind()), OwnerID: s.GetOwnerPublicId(),
		Access: accessFromProto(s.GetAccess()), WorkspaceID: s.GetWorkspacePublicId(),
	}
}

// timeToProto sends the zero time as absent, so that absence and the zero time read the same.
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

func entryToProto(e Entry) *pb.Entry {
	return &pb.Entry{Name: e.Name, SizeBytes: uint64(max(e.SizeBytes, 0)), WrittenAt: timeToProto(e.WrittenAt), Version: e.Version, Id: e.ID}
}

func entryFromProto(e *pb.Entry) Entry {
	return Entry{
		Name: e.GetName(), SizeBytes: int64(min(e.GetSizeBytes(), math.MaxInt64)),
		WrittenAt: timeFromProto(e.GetWrittenAt()), Version: e.GetVersion(), ID: e.GetId(),
	}
}

// expectToProto sends no condition as an absent message, so that an unconditional call reads
// the same to a store of any minor.
func expectToProto(e *Expect) *pb.Expect {
	if e == nil {
		return nil
	}
	return &pb.Expect{Absent: e.Absent, Id: e.ID, Version: e.Version}
}

func expectFromProto(e *pb.Expect) *Expect {
	if e == nil {
		return nil
	}
	return &Expect{Absent: e.GetAbsent(), ID: e.GetId(), Version: e.GetVersion()}
}

// limitToProto keeps an out-of-range limit out of range: a negative limit travels as the
// largest value, which the store refuses as ErrInvalidArgument just as it refuses the negative.
func limitToProto(limit int) uint32 {
	if limit < 0 || limit > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(limit)
}

func lsRequestToProto(r *LsRequest) *pb.LsRequest {
	return &pb.LsRequest{Scope: scopeToProto(r.Scope), NamePrefix: r.NamePrefix}
}

func lsRequestFromProto(r *pb.LsRequest) *LsRequest {
	return &LsRequest{Scope: scopeFromProto(r.GetScope()), NamePrefix: r.GetNamePrefix()}
}

func lsResponseToProto(r *LsResponse) *pb.LsResponse {
	out := &pb.LsResponse{}
	for _, e := range r.Entries {
		out.Entries = append(out.Entries, entryToProto(e))
	}
	return out
}

func lsResponseFromProto(r *pb.LsResponse) *LsResponse {
	out := &LsResponse{}
	for _, e := range r.GetEntries() {
		out.Entries = append(out.Entries, entryFromProto(e))
	}
	return out
}

func readRequestToProto(r *ReadRequest) *pb.ReadRequest {
	return &pb.ReadRequest{Scope: scopeToProto(r.Scope), Name: r.Name}
}

func readRequestFromProto(r *pb.ReadRequest) *ReadRequest {
	return &ReadRequest{Scope: scopeFromProto(r.GetScope()), Name: r.GetName()}
}

func readResponseToProto(r *ReadResponse) *pb.ReadResponse {
	return &pb.ReadResponse{Entry: entryToProto(r.Entry), Content: r.Content}
}

func readResponseFromProto(r *pb.ReadResponse) *ReadResponse {
	return &ReadResponse{Entry: entryFromProto(r.GetEntry()), Content: r.GetContent()}
}

func grepRequestToProto(r *GrepRequest) *pb.GrepRequest {
	return &pb.GrepRequest{
		Scope: scopeToProto(r.Scope), NamePrefix: r.NamePrefix, Pattern: r.Pattern,
		IgnoreCase: r.IgnoreCase, Limit: limitToProto(r.Limit),
	}
}

func grepRequestFromProto(r *pb.GrepRequest) *GrepRequest {
	return &GrepRequest{
		Scope: scopeFromProto(r.GetScope()), NamePrefix: r.GetNamePrefix(), Pattern: r.GetPattern(),
		IgnoreCase: r.GetIgnoreCase(), Limit: int(r.GetLimit()),
	}
}

func grepResponseToProto(r *GrepResponse) *pb.GrepResponse {
	out := &pb.GrepResponse{Truncated: r.Truncated}
	for _, m := range r.Matches {
		out.Matches = append(out.Matches, &pb.Match{Name: m.Name, LineNumber: limitToProto(m.LineNumber), Text: m.Text, Clamped: m.Clamped})
	}
	return out
}

func grepResponseFromProto(r *pb.GrepResponse) *GrepResponse {
	out := &GrepResponse{Truncated: r.GetTruncated()}
	for _, m := range r.GetMatches() {
		out.Matches = append(out.Matches, Match{Name: m.GetName(), LineNumber: int(m.GetLineNumber()), Text: m.GetText(), Clamped: m.GetClamped()})
	}
	return out
}

func writeRequestToProto(r *WriteRequest) *pb.WriteRequest {
	return &pb.WriteRequest{Scope: scopeToProto(r.Scope), Name: r.Name, Content: r.Content, WrittenAt: timeToProto(r.WrittenAt), Expect: expectToProto(r.Expect)}
}

func writeRequestFromProto(r *pb.WriteRequest) *WriteRequest {
	return &WriteRequest{Scope: scopeFromProto(r.GetScope()), Name: r.GetName(), Content: r.GetContent(), WrittenAt: timeFromProto(r.GetWrittenAt()), Expect: expectFromProto(r.GetExpect())}
}

func writeResponseToProto(r *WriteResponse) *pb.WriteResponse {
	return &pb.WriteResponse{Entry: entryToProto(r.Entry), Created: r.Created}
}

func writeResponseFromProto(r *pb.WriteResponse) *WriteResponse {
	return &WriteResponse{Entry: entryFromProto(r.GetEntry()), Created: r.GetCreated()}
}

func editRequestToProto(r *EditRequest) *pb.EditRequest {
	return &pb.EditRequest{
		Scope: scopeToProto(r.Scope), Name: r.Name, OldText: r.OldText, NewText: r.NewText,
		WrittenAt: timeToProto(r.WrittenAt), Expect: expectToProto(r.Expect),
	}
}

func editRequestFromProto(r *pb.EditRequest) *EditRequest {
	return &EditRequest{
		Scope: scopeFromProto(r.GetScope()), Name: r.GetName(), OldText: r.GetOldText(), NewText: r.GetNewText(),
		WrittenAt: timeFromProto(r.GetWrittenAt()), Expect: expectFromProto(r.GetExpect()),
	}
}

func editResponseToProto(r *EditResponse) *pb.EditResponse {
	return &pb.EditResponse{Entry: entryToProto(r.Entry)}
}

func editResponseFromProto(r *pb.EditResponse) *EditResponse {
	return &EditResponse{Entry: entryFromProto(r.GetEntry())}
}

func deleteRequestToProto(r *DeleteRequest) *pb.DeleteRequest {
	return &pb.DeleteRequest{Scope: scopeToProto(r.Scope), Name: r.Name, Expect: expectToProto(r.Expect)}
}

func deleteRequestFromProto(r *pb.DeleteRequest) *DeleteRequest {
	return &DeleteRequest{Scope: scopeFromProto(r.GetScope()), Name: r.GetName(), Expect: expectFromProto(r.GetExpect())}
}
