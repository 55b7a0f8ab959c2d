package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// longErrorValue is longer than the 30,000 bytes past which lib/pq 1.11.0 to 1.12.3 misread an
// error message and left the connection's protocol out of step, so that the connection never
// answered again (go.mod pins 1.10.9 for that).
const longErrorValue = 30_000

// wedgeBound is how long the two statements may take before the test calls the connection
// wedged: each answers in milliseconds, and a wedged one never does, whatever its context says.
const wedgeBound = time.Minute

// An error message over 30,000 bytes leaves the connection usable: PostgreSQL quotes the whole
// bad value in "invalid input syntax for type uuid", and the next statement on the same
// connection answers. The pool holds one connection, so the second statement meets the first
// one's connection.
func TestPostgresLongErrorKeepsConnection(t *testing.T) {
	if storetest.PostgresURL() == "" {
		t.Skip("the driver's error reading is PostgreSQL's; SQLite has no wire")
	}
	s, err := store.Open(context.Background(), storetest.FreshURL(t, store.Postgres), store.Options{MaxReaders: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wedgeBound)
	defer cancel()
	type answer struct {
		first, second error
		one           int
	}
	done := make(chan answer, 1)
	go func() {
		var a answer
		var got string
		a.first = s.Reader().Get(ctx, &got, `SELECT CAST(? AS uuid)::text`, strings.Repeat("a", longErrorValue))
		a.second = s.Reader().Get(ctx, &a.one, `SELECT 1`)
		done <- a
	}()
	select {
	case a := <-done:
		_ = s.Close()
		if a.first == nil || !strings.Contains(a.first.Error(), "uuid") || len(a.first.Error()) < longErrorValue {
			t.Fatalf("a 30,000-character uuid: %.200v, want the server's invalid input syntax quoting it", a.first)
		}
		if a.second != nil || a.one != 1 {
			t.Fatalf("the next statement on the same connection: %d, %v", a.one, a.second)
		}
	case <-time.After(wedgeBound):
		// The wedged connection is left behind: closing the pool would wait for it.
		t.Fatalf("the connection did not answer within %v of a 30,000-byte error: the driver is out of step", wedgeBound)
	}
}
