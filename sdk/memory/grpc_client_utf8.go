package memory

import (
	"context"
	"fmt"
)

// The wire's string fields carry UTF-8 only (protobuf refuses anything else), but a Provider
// may be handed any Go string. When a request holds text that is not UTF-8 the client answers
// what every store must answer for it, in the contract's check order (Provider's doc), instead
// of failing in the encoder: a name that is not UTF-8 is never valid, content that is not UTF-8
// is ErrContentInvalid, and such a prefix or edit text can match nothing that a store holds,
// since every stored name and content is UTF-8.

// targetProblem applies the scope, name and access checks; a name that is not UTF-8 always
// fails the name check, so this answers an error whenever name is not UTF-8.
func targetProblem(s Scope, name string, mutation bool) error {
	if err := ValidScope(s); err != nil {
		return err
	}
	if err := ValidName(name); err != nil {
		return err
	}
	if mutation && !s.Writable() {
		return ErrReadOnly
	}
	return nil
}

func lsInvalidPrefix(req *LsRequest) (*LsResponse, error) {
	if err := ValidScope(req.Scope); err != nil {
		return nil, err
	}
	return &LsResponse{}, nil
}

func grepInvalidText(ctx context.Context, req *GrepRequest) (*GrepResponse, error) {
	if err := ValidScope(req.Scope); err != nil {
		return nil, err
	}
	if _, err := NewMatcher(req); err != nil {
		return nil, err
	}
	if err := CheckDeadline(ctx); err != nil {
		return nil, err
	}
	return &GrepResponse{}, nil
}

// editInvalidText answers an edit whose name, new text or old text is not UTF-8. An old text
// that is not UTF-8 occurs in no stored document, so the answer depends only on whether the
// document exists, which a Read tells.
func (c *grpcClient) editInvalidText(ctx context.Context, req *EditRequest) (*EditResponse, error) {
	if err := targetProblem(req.Scope, req.Name, true); err != nil {
		return nil, err
	}
	if err := CheckContent(req.NewText); err != nil {
		return nil, err
	}
	if req.OldText == "" {
		return nil, fmt.Errorf("%w: empty edit text", ErrInvalidArgument)
	}
	if _, err := c.Read(ctx, &ReadRequest{Scope: req.Scope, Name: req.Name}); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%w: edit text is not UTF-8", ErrEditNotFound)
}
