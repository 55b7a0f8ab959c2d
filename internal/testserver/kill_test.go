package testserver

import (
	"context"
	"testing"

	"github.com/nexuskernel/nexus/core/store"
)

// TestInProcessKill: Kill of an in-process server stops it (there is no process to kill), and it
// restarts on the same store.
func TestInProcessKill(t *testing.T) {
	t.Parallel()
	in := Start(t, Options{Dialect: store.SQLite})
	if in.Server() == nil {
		t.Fatal("a running in-process instance has no server")
	}
	in.Kill()
	if in.Server() != nil {
		t.Fatal("a killed instance still has a server")
	}
	in.Restart()
	if _, err := in.Client().Tools(context.Background()); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}
