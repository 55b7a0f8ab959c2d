package client

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// The default client keeps a connection per concurrent caller: three bursts of sixteen
// simultaneous calls reuse the sixteen connections of the first, where net/http's default
// transport (two idle connections per host) closes fourteen after each burst and dials them
// again for the next.
func TestDefaultClientKeepsConnections(t *testing.T) {
	const callers, bursts = 16, 3
	var opened atomic.Int64
	var mu sync.Mutex
	arrived, release := 0, make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Hold every call of a burst until all of them arrived, so that all its connections
		// are busy at once and come back idle together.
		mu.Lock()
		arrived++
		rel := release
		if arrived == callers {
			arrived = 0
			release = make(chan struct{})
			close(rel)
		}
		mu.Unlock()
		<-rel
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"tools":[]}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := New(srv.URL, "token")
	for b := 0; b < bursts; b++ {
		var wg sync.WaitGroup
		errs := make(chan error, callers)
		for g := 0; g < callers; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := c.Tools(context.Background()); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	if n := opened.Load(); n != callers {
		t.Fatalf("%d bursts of %d simultaneous calls opened %d connections, want %d", bursts, callers, n, callers)
	}
}
