package refusal

import (
	"errors"
	"fmt"
	"testing"
)

func TestWithKeepsOrderAndOriginal(t *testing.T) {
	t.Parallel()
	base := New(Unprocessable, CodeValidationFailed, "bad")
	e := base.With("path", "a.b").With("word", "x")
	if len(base.Extra) != 0 {
		t.Fatal("With changed the original")
	}
	if len(e.Extra) != 2 || e.Extra[0].Key != "path" || e.Extra[1].Key != "word" {
		t.Fatalf("extras = %+v", e.Extra)
	}
	if v, ok := e.Get("word"); !ok || v != "x" {
		t.Fatalf("Get(word) = %v, %v", v, ok)
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
