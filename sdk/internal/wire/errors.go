package wire

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/nexuskernel/nexus/sdk/internal/pb/nexus/plugin/v1"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// CodeFor is the gRPC code a typed error travels under (docs/plugins.md#the-protocol).
func CodeFor(kind pb.ErrorKind) codes.Code {
	switch kind {
	case pb.ErrorKind_ERROR_KIND_NOT_FOUND, pb.ErrorKind_ERROR_KIND_EDIT_NOT_FOUND:
		return codes.NotFound
	case pb.ErrorKind_ERROR_KIND_FULL, pb.ErrorKind_ERROR_KIND_TOO_LARGE:
		return codes.ResourceExhausted
	case pb.ErrorKind_ERROR_KIND_INVALID_ARGUMENT, pb.ErrorKind_ERROR_KIND_NAME_INVALID,
		pb.ErrorKind_ERROR_KIND_CONTENT_INVALID, pb.ErrorKind_ERROR_KIND_PATTERN_INVALID,
		pb.ErrorKind_ERROR_KIND_CONFIG_INVALID:
		return codes.InvalidArgument
	case pb.ErrorKind_ERROR_KIND_EDIT_AMBIGUOUS, pb.ErrorKind_ERROR_KIND_READ_ONLY, pb.ErrorKind_ERROR_KIND_STALE:
		return codes.FailedPrecondition
	case pb.ErrorKind_ERROR_KIND_PATTERN_TOO_COSTLY:
		return codes.DeadlineExceeded
	case pb.ErrorKind_ERROR_KIND_UNKNOWN_TOOL:
		return codes.Unimplemented
	case pb.ErrorKind_ERROR_KIND_UNAVAILABLE:
		return codes.Unavailable
	case pb.ErrorKind_ERROR_KIND_OUTCOME_UNKNOWN:
		return codes.Aborted
	}
	return codes.Internal
}

// ToStatus turns a handler's error into the status a server shim returns: the kind kindOf
// finds, in an Error detail, under its code. A kind outside the enum is sent as INTERNAL. The
// message is err's text: the peer logs it, a model never reads it.
func ToStatus(err error, kindOf func(error) int32) error {
	if err == nil {
		return nil
	}
	kind := pb.ErrorKind(kindOf(err))
	if _, known := pb.ErrorKind_name[int32(kind)]; !known || kind == pb.ErrorKind_ERROR_KIND_UNSPECIFIED {
		kind = pb.ErrorKind_ERROR_KIND_INTERNAL
	}
	return KindStatus(kind, err.Error())
}

// KindStatus is a status carrying kind and message.
func KindStatus(kind pb.ErrorKind, message string) error {
	st := status.New(CodeFor(kind), message)
	if withDetail, err := st.WithDetails(&pb.Error{Kind: kind, Message: message}); err == nil {
		st = withDetail
	}
	return st.Err()
}

// Remote is an error read back from a peer.
type Remote struct {
	// Typed says the status carried an Error detail; Kind and Message come from it.
	Typed   bool
	Kind    pb.ErrorKind
	Message string
	// Code is the status code, for errors without a detail.
	Code codes.Code
}

// FromStatus reads err as a peer's status. A non-status error reads as an untyped Unknown.
func FromStatus(err error) Remote {
	st, ok := status.FromError(err)
	if !ok {
		return Remote{Code: codes.Unknown, Message: err.Error()}
	}
	for _, d := range st.Details() {
		if e, ok := d.(*pb.Error); ok {
			kind := e.GetKind()
			if _, known := pb.ErrorKind_name[int32(kind)]; !known {
				kind = pb.ErrorKind_ERROR_KIND_UNSPECIFIED // an unknown value reads as UNSPECIFIED
			}
			return Remote{Typed: true, Kind: kind, Message: e.GetMessage(), Code: st.Code()}
		}
	}
	return Remote{Code: st.Code(), Message: st.Message()}
}

// Transport answers what an untyped failure means for a call made under ctx: the caller's own
// end (ctx's error), or plugin.ErrPluginShutdown when the process is gone or the connection
// broke (Unavailable, or Canceled that the caller did not ask for). It answers nil for a typed
// error and for any other untyped failure, which the kind package maps itself.
func Transport(ctx context.Context, r Remote) error {
	if r.Typed {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	switch r.Code {
	case codes.Unavailable, codes.Canceled:
		return fmt.Errorf("%w: %s", plugin.ErrPluginShutdown, r.Message)
	}
	return nil
}

// PluginKindOf is the error kind of a Configure failure: ErrConfigInvalid refuses the load,
// anything else is a failed start the host retries.
func PluginKindOf(err error) int32 {
	if errors.Is(err, plugin.ErrConfigInvalid) {
		return int32(pb.ErrorKind_ERROR_KIND_CONFIG_INVALID)
	}
	return int32(pb.ErrorKind_ERROR_KIND_UNAVAILABLE)
}
