package wire

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/nexuskernel/nexus/sdk/internal/pb/nexus/plugin/v1"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// TestCodeFor pins the code for every kind (docs/plugins.md#the-protocol).
func TestCodeFor(t *testing.T) {
	t.Parallel()
	want := map[pb.ErrorKind]codes.Code{
		pb.ErrorKind_ERROR_KIND_UNSPECIFIED:        codes.Internal,
		pb.ErrorKind_ERROR_KIND_INVALID_ARGUMENT:   codes.InvalidArgument,
		pb.ErrorKind_ERROR_KIND_NAME_INVALID:       codes.InvalidArgument,
		pb.ErrorKind_ERROR_KIND_NOT_FOUND:          codes.NotFound,
		pb.ErrorKind_ERROR_KIND_FULL:               codes.ResourceExhausted,
		pb.ErrorKind_ERROR_KIND_TOO_LARGE:          codes.ResourceExhausted,
		pb.ErrorKind_ERROR_KIND_CONTENT_INVALID:    codes.InvalidArgument,
		pb.ErrorKind_ERROR_KIND_EDIT_NOT_FOUND:     codes.NotFound,
		pb.ErrorKind_ERROR_KIND_EDIT_AMBIGUOUS:     codes.FailedPrecondition,
		pb.ErrorKind_ERROR_KIND_PATTERN_INVALID:    codes.InvalidArgument,
		pb.ErrorKind_ERROR_KIND_PATTERN_TOO_COSTLY: codes.DeadlineExceeded,
		pb.ErrorKind_ERROR_KIND_READ_ONLY:          codes.FailedPrecondition,
		pb.ErrorKind_ERROR_KIND_UNKNOWN_TOOL:       codes.Unimplemented,
		pb.ErrorKind_ERROR_KIND_CONFIG_INVALID:     codes.InvalidArgument,
		pb.ErrorKind_ERROR_KIND_UNAVAILABLE:        codes.Unavailable,
		pb.ErrorKind_ERROR_KIND_INTERNAL:           codes.Internal,
		pb.ErrorKind_ERROR_KIND_OUTCOME_UNKNOWN:    codes.Aborted,
		pb.ErrorKind_ERROR_KIND_STALE:              codes.FailedPrecondition,
	}
	if len(want) != len(pb.ErrorKind_name) {
		t.Fatalf("the table covers %d kinds; the enum has %d", len(want), len(pb.ErrorKind_name))
	}
	for kind, code := range want {
		if got := CodeFor(kind); got != code {
			t.Errorf("%v: code %v, want %v", kind, got, code)
		}
		r := FromStatus(KindStatus(kind, "m"))
		if !r.Typed || r.Kind != kind || r.Message != "m" || r.Code != code {
			t.Errorf("%v: read back %+v", kind, r)
		}
	}
}

func TestToStatus(t *testing.T) {
	t.Parallel()
	if ToStatus(nil, nil) != nil {
		t.Error("nil error must stay nil")
	}
	// A kind outside the enum, or UNSPECIFIED, is sent as INTERNAL.
	for _, k := range []int32{0, 99} {
		r := FromStatus(ToStatus(errors.New("x"), func(error) int32 { return k }))
		if r.Kind != pb.ErrorKind_ERROR_KIND_INTERNAL || r.Code != codes.Internal {
			t.Errorf("kind %d sent as %+v", k, r)
		}
	}
	if r := FromStatus(errors.New("plain")); r.Typed || r.Code != codes.Unknown {
		t.Errorf("a non-status error read as %+v", r)
	}
}

func TestPluginErrors(t *testing.T) {
	t.Parallel()
	if k := PluginKindOf(fmt.Errorf("bad root: %w", plugin.ErrConfigInvalid)); k != int32(pb.ErrorKind_ERROR_KIND_CONFIG_INVALID) {
		t.Errorf("config invalid sent as %d", k)
	}
	if k := PluginKindOf(errors.New("db down")); k != int32(pb.ErrorKind_ERROR_KIND_UNAVAILABLE) {
		t.Errorf("other failure sent as %d", k)
	}
	bg := context.Background()
	canceled, cancel := context.WithCancel(bg)
	cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
		err  error
		want error
	}{
		{"config invalid", bg, KindStatus(pb.ErrorKind_ERROR_KIND_CONFIG_INVALID, "root"), plugin.ErrConfigInvalid},
		{"unavailable", bg, KindStatus(pb.ErrorKind_ERROR_KIND_UNAVAILABLE, "db"), plugin.ErrUnavailable},
		{"internal is a failed start", bg, KindStatus(pb.ErrorKind_ERROR_KIND_INTERNAL, "panic"), plugin.ErrUnavailable},
		{"lost process", bg, status.Error(codes.Unavailable, "eof"), plugin.ErrPluginShutdown},
		{"caller canceled", canceled, status.Error(codes.Canceled, "canceled"), context.Canceled},
	} {
		if got := pluginError(c.ctx, c.err); !errors.Is(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
