package testserver

import (
	"context"
	"testing"

	"github.com/nexuskernel/nexus/core/store/storetest"
)

func TestMain(m *testing.M) { Main(m) }

func TestStartStopRestart(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		for _, sub := range []bool{false, true} {
			name := string(d) + "/inprocess"
			if sub {
				name = string(d) + "/subprocess"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				in := Start(t, Options{Dialect: d, Subprocess: sub})
				cat, err := in.Client().Tools(context.Background())
				if err != nil || len(cat.Tools) != 20 {
					t.Fatalf("catalog: %v, %d tools", err, len(cat.Tools))
				}
				if sub {
					in.Kill()
				} else if err := in.Stop(); err != nil {
					t.Fatalf("stop: %v", err)
				}
				in.Restart()
				// The restarted server bootstrapped nothing: the first token still works.
				if _, err := in.Client().Tools(context.Background()); err != nil {
					t.Fatalf("after restart: %v", err)
				}
				if err := in.Stop(); err != nil {
					t.Fatalf("graceful stop: %v", err)
				}
			})
		}
	}
}
