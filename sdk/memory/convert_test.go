package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/nexuskernel/nexus/sdk/internal/pb/nexus/plugin/v1"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

var (
	convScope = Scope{Binding: "workspace", Kind: ScopeWorkspace, OwnerID: "0193c2d4-5e6f-7a8b-9c0d-000000000002", Access: AccessReadWrite, WorkspaceID: "0193c2d4-5e6f-7a8b-9c0d-000000000002"}
	convTime  = time.Date(2030, 1, 15, 9, 0, 0, 123456000, time.UTC)
	convEntry = Entry{Name: "notes/todo.md", SizeBytes: 88, WrittenAt: convTime, Version: 3}
)

func TestScopeRoundTrip(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		in   Scope
		want Scope
	}{
		{"workspace read_write", convScope, convScope},
		{"conversation read", Scope{Binding: "conversation", Kind: ScopeConversation, OwnerID: "x", Access: AccessRead}, Scope{Binding: "conversation", Kind: ScopeConversation, OwnerID: "x", Access: AccessRead}},
		{"user", Scope{Binding: "user", Kind: ScopeUser, Access: AccessReadWrite}, Scope{Binding: "user", Kind: ScopeUser, Access: AccessReadWrite}},
		// Words the wire cannot name come back empty, which ValidScope refuses on the far side.
		{"unknown kind and access", Scope{Binding: "team", Kind: "team", Access: "write"}, Scope{Binding: "team"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(c.want, scopeFromProto(scopeToProto(c.in))); diff != "" {
				t.Error(diff)
			}
		})
	}
}

func TestEntryRoundTrip(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		in   Entry
		want Entry
	}{
		{"microseconds kept", convEntry, convEntry},
		{"zero time travels as absent", Entry{Name: "a", Version: 1}, Entry{Name: "a", Version: 1}},
		{"negative size clamps to 0", Entry{Name: "a", SizeBytes: -1, Version: 1}, Entry{Name: "a", Version: 1}},
		{"non-UTC time comes back UTC", Entry{Name: "a", WrittenAt: convTime.In(time.FixedZone("x", 3600)), Version: 1}, Entry{Name: "a", WrittenAt: convTime, Version: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := entryFromProto(entryToProto(c.in))
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Error(diff)
			}
		})
	}
}

func TestRequestRoundTrips(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		in, want any
		trip     func(any) any
	}{
		{"ls", &LsRequest{Scope: convScope, NamePrefix: "a%_\\"}, &LsRequest{Scope: convScope, NamePrefix: "a%_\\"},
			func(v any) any { return lsRequestFromProto(lsRequestToProto(v.(*LsRequest))) }},
		{"read", &ReadRequest{Scope: convScope, Name: "doc"}, &ReadRequest{Scope: convScope, Name: "doc"},
			func(v any) any { return readRequestFromProto(readRequestToProto(v.(*ReadRequest))) }},
		{"grep", &GrepRequest{Scope: convScope, NamePrefix: "n", Pattern: "a+", IgnoreCase: true, Limit: 500}, &GrepRequest{Scope: convScope, NamePrefix: "n", Pattern: "a+", IgnoreCase: true, Limit: 500},
			func(v any) any { return grepRequestFromProto(grepRequestToProto(v.(*GrepRequest))) }},
		{"grep limit 0", &GrepRequest{Scope: convScope, Pattern: "a"}, &GrepRequest{Scope: convScope, Pattern: "a"},
			func(v any) any { return grepRequestFromProto(grepRequestToProto(v.(*GrepRequest))) }},
		{"grep negative limit stays out of range", &GrepRequest{Scope: convScope, Pattern: "a", Limit: -1}, &GrepRequest{Scope: convScope, Pattern: "a", Limit: math.MaxUint32},
			func(v any) any { return grepRequestFromProto(grepRequestToProto(v.(*GrepRequest))) }},
		{"write", &WriteRequest{Scope: convScope, Name: "doc", Content: "héllo\r\n", WrittenAt: convTime}, &WriteRequest{Scope: convScope, Name: "doc", Content: "héllo\r\n", WrittenAt: convTime},
			func(v any) any { return writeRequestFromProto(writeRequestToProto(v.(*WriteRequest))) }},
		{"edit", &EditRequest{Scope: convScope, Name: "doc", OldText: "a", NewText: "", WrittenAt: convTime}, &EditRequest{Scope: convScope, Name: "doc", OldText: "a", WrittenAt: convTime},
			func(v any) any { return editRequestFromProto(editRequestToProto(v.(*EditRequest))) }},
		{"delete", &DeleteRequest{Scope: convScope, Name: "doc"}, &DeleteRequest{Scope: convScope, Name: "doc"},
			func(v any) any { return deleteRequestFromProto(deleteRequestToProto(v.(*DeleteRequest))) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(c.want, c.trip(c.in)); diff != "" {
				t.Error(diff)
			}
		})
	}
}

func TestResponseRoundTrips(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		in, want any
		trip     func(any) any
	}{
		{"ls empty", &LsResponse{}, &LsResponse{}, func(v any) any { return lsResponseFromProto(lsResponseToProto(v.(*LsResponse))) }},
		{"ls", &LsResponse{Entries: []Entry{convEntry, {Name: "b", SizeBytes: 0, WrittenAt: convTime, Version: 1}}}, &LsResponse{Entries: []Entry{convEntry, {Name: "b", WrittenAt: convTime, Version: 1}}},
			func(v any) any { return lsResponseFromProto(lsResponseToProto(v.(*LsResponse))) }},
		{"read", &ReadResponse{Entry: convEntry, Content: "x\n"}, &ReadResponse{Entry: convEntry, Content: "x\n"},
			func(v any) any { return readResponseFromProto(readResponseToProto(v.(*ReadResponse))) }},
		{"grep", &GrepResponse{Matches: []Match{{Name: "a", LineNumber: 3, Text: "t", Clamped: true}}, Truncated: true}, &GrepResponse{Matches: []Match{{Name: "a", LineNumber: 3, Text: "t", Clamped: true}}, Truncated: true},
			func(v any) any { return grepResponseFromProto(grepResponseToProto(v.(*GrepResponse))) }},
		{"write", &WriteResponse{Entry: convEntry, Created: true}, &WriteResponse{Entry: convEntry, Created: true},
			func(v any) any { return writeResponseFromProto(writeResponseToProto(v.(*WriteResponse))) }},
		{"edit", &EditResponse{Entry: convEntry}, &EditResponse{Entry: convEntry},
			func(v any) any { return editResponseFromProto(editResponseToProto(v.(*EditResponse))) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(c.want, c.trip(c.in)); diff != "" {
				t.Error(diff)
			}
		})
	}
}

// TestErrorKindsRoundTrip: every sentinel crosses the wire as its kind under the code of
// docs/plugins.md#the-protocol and comes back as the same sentinel.
func TestErrorKindsRoundTrip(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sentinel error
		kind     pb.ErrorKind
		code     codes.Code
	}{
		{ErrInvalidArgument, pb.ErrorKind_ERROR_KIND_INVALID_ARGUMENT, codes.InvalidArgument},
		{ErrNameInvalid, pb.ErrorKind_ERROR_KIND_NAME_INVALID, codes.InvalidArgument},
		{ErrNotFound, pb.ErrorKind_ERROR_KIND_NOT_FOUND, codes.NotFound},
		{ErrFull, pb.ErrorKind_ERROR_KIND_FULL, codes.ResourceExhausted},
		{ErrTooLarge, pb.ErrorKind_ERROR_KIND_TOO_LARGE, codes.ResourceExhausted},
		{ErrContentInvalid, pb.ErrorKind_ERROR_KIND_CONTENT_INVALID, codes.InvalidArgument},
		{ErrEditNotFound, pb.ErrorKind_ERROR_KIND_EDIT_NOT_FOUND, codes.NotFound},
		{ErrEditAmbiguous, pb.ErrorKind_ERROR_KIND_EDIT_AMBIGUOUS, codes.FailedPrecondition},
		{ErrPatternInvalid, pb.ErrorKind_ERROR_KIND_PATTERN_INVALID, codes.InvalidArgument},
		{ErrPatternTooCostly, pb.ErrorKind_ERROR_KIND_PATTERN_TOO_COSTLY, codes.DeadlineExceeded},
		{ErrReadOnly, pb.ErrorKind_ERROR_KIND_READ_ONLY, codes.FailedPrecondition},
		{ErrUnavailable, pb.ErrorKind_ERROR_KIND_UNAVAILABLE, codes.Unavailable},
	} {
		t.Run(c.sentinel.Error(), func(t *testing.T) {
			t.Parallel()
			sent := toStatus(fmt.Errorf("store says: %w", c.sentinel))
			st, _ := status.FromError(sent)
			if st.Code() != c.code {
				t.Errorf("code %v, want %v", st.Code(), c.code)
			}
			if len(st.Details()) != 1 || st.Details()[0].(*pb.Error).GetKind() != c.kind {
				t.Errorf("details %v, want kind %v", st.Details(), c.kind)
			}
			for _, grep := range []bool{false, true} {
				back := clientError(context.Background(), sent, grep)
				if !errors.Is(back, c.sentinel) {
					t.Errorf("grep=%v: came back as %v, not %v", grep, back, c.sentinel)
				}
			}
		})
	}
}

// TestUntypedErrors: a status without an Error detail (docs/plugins.md#the-protocol).
func TestUntypedErrors(t *testing.T) {
	t.Parallel()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
		err  error
		grep bool
		want error
	}{
		{"unavailable is a lost process", context.Background(), status.Error(codes.Unavailable, "connection refused"), false, plugin.ErrPluginShutdown},
		{"canceled not asked for is a lost process", context.Background(), status.Error(codes.Canceled, "closing"), false, plugin.ErrPluginShutdown},
		{"the caller's own cancel", canceled, status.Error(codes.Canceled, "context canceled"), false, context.Canceled},
		{"deadline on grep is too costly", context.Background(), status.Error(codes.DeadlineExceeded, "deadline"), true, ErrPatternTooCostly},
		{"deadline elsewhere is unavailable", context.Background(), status.Error(codes.DeadlineExceeded, "deadline"), false, ErrUnavailable},
		{"anything else is unavailable", context.Background(), status.Error(codes.Internal, "oops"), false, ErrUnavailable},
		{"internal kind matches no sentinel", context.Background(), toStatus(errors.New("boom")), false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := clientError(c.ctx, c.err, c.grep)
			if c.want == nil {
				if KindOf(got) != KindInternal {
					t.Errorf("got %v (kind %v), want an internal error", got, KindOf(got))
				}
				return
			}
			if !errors.Is(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}
