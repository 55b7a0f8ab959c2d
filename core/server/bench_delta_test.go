package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/model/wire"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/internal/testserver"
	"github.com/nexuskernel/nexus/sdk/client"
)

// chunkServer is a loopback OpenAI-compatible server that streams n chunks, "c<i> ", a gap
// apart, recording when it wrote each.
type chunkServer struct {
	*httptest.Server
	n   int
	gap time.Duration

	mu   sync.Mutex
	sent map[int]time.Time
}

func newChunkServer(b *testing.B, n int, gap time.Duration) *chunkServer {
	cs := &chunkServer{n: n, gap: gap, sent: map[int]time.Time{}}
	cs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		cs.mu.Lock()
		cs.sent = map[int]time.Time{} // each stream is timed on its own
		cs.mu.Unlock()
		for i := range cs.n {
			// Recorded before the write, so that no reader finds a chunk it parsed untimed.
			cs.mu.Lock()
			cs.sent[i] = time.Now()
			cs.mu.Unlock()
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"c%d \"},\"finish_reason\":null}]}\n\n", i)
			fl.Flush()
			time.Sleep(cs.gap)
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
		fl.Flush()
	}))
	b.Cleanup(cs.Close)
	return cs
}

// since answers, for each chunk index in text, the time since the server flushed it.
func (cs *chunkServer) since(text string, at time.Time) latencies {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var l latencies
	for _, f := range strings.Fields(text) {
		i, err := strconv.Atoi(strings.TrimPrefix(f, "c"))
		if err != nil {
			continue
		}
		if s, ok := cs.sent[i]; ok {
			l = append(l, at.Sub(s))
		}
	}
	return l
}

// chunkConfig is a deployment whose model loop/m streams from cs.
func chunkConfig(cs *chunkServer) string {
	return fmt.Sprintf(`
model_provider "loop" {
  type         = "openai"
  base_url     = %q
  api_key      = env("NEXUS_TEST_KEY")
  idle_timeout = "30s"
}
model "loop/m" {
  id = "m"
  capabilities {
    context_window    = 100000
    max_output_tokens = 1000
  }
}
`, cs.URL+"/v1")
}

// deltaLatencies follows a member stream and answers, per chunk, the time from the server's
// write to the delta's arrival, until a round sealed (the benchmark's server runs one run), and
// how many deltas carried them.
func deltaLatencies(b *testing.B, c *client.Client, cs *chunkServer, ready chan<- struct{}) (latencies, int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := c.MemberEvents(ctx, "default", client.MemberEventOptions{})
	if err != nil {
		b.Error(err)
		close(ready)
		return nil, 0
	}
	defer s.Close()
	close(ready)
	var l latencies
	deltas := 0
	for {
		ev, err := s.Next()
		if err != nil {
			b.Error(err)
			return l, deltas
		}
		if ev.Type == client.MemberModelDelta {
			l = append(l, cs.since(ev.Text, time.Now())...)
			deltas++
		}
		if ev.Type == client.MemberRoundSealed {
			return l, deltas
		}
	}
}

// BenchmarkDeltaLatency is B23: a loopback OpenAI-compatible server streams b.N chunks a
// millisecond apart into one round; each chunk's time from the server's flush to its model.delta
// reaching an SSE client of the same instance (and, on PostgreSQL, of a second one, where deltas
// are gathered for up to events.DeltaDelay), against the same chunks' time to a bare parse of
// the provider's stream by a client of the server in the same process (wire.NewSSEReader, the
// adapter's parser). Goal: at most 1 ms added at p50 on the same instance; across instances
// reported.
func BenchmarkDeltaLatency(b *testing.B) {
	for _, d := range storetest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			b.StopTimer()
			cs := newChunkServer(b, b.N, time.Millisecond)
			one := testserver.Start(b, testserver.Options{Dialect: d, Config: chunkConfig(cs), LogLevel: hclog.Info, Env: map[string]string{"NEXUS_TEST_KEY": "k"}})
			var two *testserver.Instance
			if d == store.Postgres {
				two = testserver.Start(b, testserver.Options{Peer: one, Config: chunkConfig(cs), LogLevel: hclog.Info, Env: map[string]string{"NEXUS_TEST_KEY": "k"}})
			}
			// The floor: the same stream parsed by a bare client.
			base := func() latencies {
				resp, err := http.Post(cs.URL+"/v1/chat/completions", "application/json", strings.NewReader("{}"))
				if err != nil {
					b.Fatal(err)
				}
				defer resp.Body.Close()
				r := wire.NewSSEReader(resp.Body)
				var l latencies
				for {
					ev, err := r.Next()
					if err != nil {
						return l
					}
					var c struct {
						Choices []struct {
							Delta struct {
								Content string `json:"content"`
							} `json:"delta"`
						} `json:"choices"`
					}
					if json.Unmarshal(ev.Data, &c) == nil && len(c.Choices) > 0 {
						l = append(l, cs.since(c.Choices[0].Delta.Content, time.Now())...)
					}
				}
			}()
			type heard struct {
				l      latencies
				deltas int
			}
			type follower struct {
				ready chan struct{}
				got   chan heard
			}
			follow := func(c *client.Client) *follower {
				f := &follower{ready: make(chan struct{}), got: make(chan heard, 1)}
				go func() {
					l, n := deltaLatencies(b, c, cs, f.ready)
					f.got <- heard{l, n}
				}()
				<-f.ready
				return f
			}
			near := follow(one.Client())
			var far *follower
			if two != nil {
				far = follow(two.Client())
			}
			b.StartTimer()
			if _, err := one.Client().CreateRun(context.Background(), "default", json.RawMessage(`{"approval_mode":"bypass","steps":[{"model":{"model":"loop/m","prompt":"count"}}]}`), ""); err != nil {
				b.Fatal(err)
			}
			h1 := <-near.got
			b.StopTimer()
			// Either instance's workers may run the round: the one that ran it hears a delta per
			// chunk, the other the relay's gathered pieces.
			n, f := h1.l, latencies(nil)
			if far != nil {
				h2 := <-far.got
				if h2.deltas > h1.deltas {
					n, f = h2.l, h1.l
				} else {
					f = h2.l
				}
			}
			if len(n) == 0 || len(base) == 0 {
				b.Fatalf("chunks timed: %d on the stream, %d parsed bare", len(n), len(base))
			}
			added := n.quantile(0.5) - base.quantile(0.5)
			b.ReportMetric(float64(added.Microseconds()), "added-p50-µs")
			msg := fmt.Sprintf("B23 chunk to model.delta (%s, %d chunks): p50 the instance running the round %v, bare parse %v, added %v (goal <= 1ms); p99 %v, %v",
				d, len(n), n.quantile(0.5), base.quantile(0.5), added, n.quantile(0.99), base.quantile(0.99))
			if len(f) > 0 {
				msg += fmt.Sprintf("; the other instance p50 %v p99 %v (gathered for up to 50 ms)", f.quantile(0.5), f.quantile(0.99))
			}
			b.Log(msg)
		})
	}
}
