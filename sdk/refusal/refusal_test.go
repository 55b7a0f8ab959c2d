package refusal

import (
	"errors"
	"fmt"
	"testing"
)

func TestWithKeepsOrderAndOriginal(t *testing.T) {
	t.Parallel()
	base := New(Unprocessable, CodeValidationFailed, "bad")
	r := base.With("path", "a.b").With("word", "x")
	if len(base.Extra) != 0 {
		t.Fatal("With changed the original")
	}
	if len(r.Extra) != 2 || r.Extra[0].Key != "path" || r.Extra[1].Key != "word" {
		t.Fatalf("extras = %+v", r.Extra)
	}
	if v, ok := r.Get("word"); !ok || v != "x" {
		t.Fatalf("Get(word) = %v, %v", v, ok)
	}
	if _, ok := r.Get("name"); ok {
		t.Fatal("Get found a key that was never added")
	}
}

func TestIsMatchesByCode(t *testing.T) {
	t.Parallel()
	sentinel := New(Conflict, "handle_taken", "")
	err := fmt.Errorf("wrapped: %w", Newf(Conflict, "handle_taken", "The handle %q is taken.", "x"))
	if !errors.Is(err, sentinel) {
		t.Fatal("errors.Is does not match the same code")
	}
	if errors.Is(err, New(Conflict, "already_member", "")) {
		t.Fatal("errors.Is matches another code")
	}
	r, ok := As(err)
	if !ok || r.Message != `The handle "x" is taken.` {
		t.Fatalf("As = %+v, %v", r, ok)
	}
}

func TestErrorNamesCodeMessageAndCause(t *testing.T) {
	t.Parallel()
	r := New(Internal, "internal_error", "failed")
	if got := r.Error(); got != "internal_error: failed" {
		t.Fatalf("Error() = %q", got)
	}
	cause := errors.New("disk full")
	r.Cause = cause
	if got := r.Error(); got != "internal_error: failed: disk full" {
		t.Fatalf("Error() with cause = %q", got)
	}
	if !errors.Is(r, cause) {
		t.Fatal("the cause does not unwrap")
	}
}
