package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// benchResult is one variant's figures.
type benchResult struct {
	nsPerOp float64
	p99     time.Duration
}

// BenchmarkCatalog is B3: GET /agent_api/v1/tools through the real stack, against (a) a bare
// net/http handler that checks the same token the same way and writes the same bytes, and (b) one
// that writes the bytes with no check, over loopback HTTP at concurrency 1 and 16, on every
// dialect this run reaches. The parent logs the ratios of each run.
func BenchmarkCatalog(b *testing.B) {
	for _, d := range storetest.Dialects() {
		for _, conc := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/c%d", d, conc), func(b *testing.B) {
				f := newBenchFixture(b, d)
				results := map[string]benchResult{}
				for _, v := range []struct {
					name string
					h    http.Handler
				}{
					{"stack", f.api},
					{"bare-auth", f.bareAuth()},
					{"bare-bytes", f.bareBytes()},
				} {
					b.Run(v.name, func(b *testing.B) {
						results[v.name] = runLoad(b, v.h, f.token, conc)
					})
				}
				s, a, n := results["stack"], results["bare-auth"], results["bare-bytes"]
				if s.nsPerOp > 0 && a.nsPerOp > 0 && n.nsPerOp > 0 {
					b.Logf("%s c=%d: throughput stack/bare-auth %.2fx (goal >= 0.8), stack/bare-bytes %.2fx; p99 stack %v, bare-auth %v (ratio %.2fx, goal <= 2), bare-bytes %v",
						d, conc, a.nsPerOp/s.nsPerOp, n.nsPerOp/s.nsPerOp, s.p99, a.p99, float64(s.p99)/float64(a.p99), n.p99)
				}
			})
		}
	}
}

// BenchmarkAuthCost measures what authenticating a request costs on each store, side by side
// with the catalog request it guards, at concurrency 16: "auth" is Authenticator.Member as every
// member route calls it (cached), "lookup" is the token SELECT it replaces on a cache hit (what
// every request paid before the cache), and "catalog" is B3's full-stack GET /agent_api/v1/tools
// over loopback. The parent logs each cost as a share of the catalog request; the goal is under
// 10%.
func BenchmarkAuthCost(b *testing.B) {
	const conc = 16
	for _, d := range storetest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			f := newBenchFixture(b, d)
			hash := identity.HashToken(f.token)
			parallel := func(b *testing.B, fn func() error) float64 {
				b.SetParallelism((conc + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := fn(); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.StopTimer()
				return float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			}
			ns := map[string]float64{}
			b.Run("auth", func(b *testing.B) {
				ctx := b.Context()
				ns["auth"] = parallel(b, func() error { _, err := f.auth.Member(ctx, f.token); return err })
			})
			b.Run("lookup", func(b *testing.B) {
				ctx := b.Context()
				ns["lookup"] = parallel(b, func() error { _, err := store.MemberTokenByHash(ctx, f.store.Reader(), hash); return err })
			})
			b.Run("catalog", func(b *testing.B) {
				ns["catalog"] = runLoad(b, f.api, f.token, conc).nsPerOp
			})
			if c := ns["catalog"]; c > 0 && ns["auth"] > 0 && ns["lookup"] > 0 {
				b.Logf("%s c=%d: auth %.0f ns = %.1f%% of a catalog request (%.0f ns; goal < 10%%); uncached token lookup %.0f ns = %.1f%%",
					d, conc, ns["auth"], 100*ns["auth"]/c, c, ns["lookup"], 100*ns["lookup"]/c)
			}
		})
	}
}

type benchFixture struct {
	store *store.Store
	api   *API
	auth  *identity.Authenticator
	body  []byte
	token string
}

func newBenchFixture(b *testing.B, d store.Dialect) *benchFixture {
	b.Helper()
	s := storetest.Open(b, d)
	res, err := identity.Bootstrap(b.Context(), s, b.TempDir(), "", time.Now())
	if err != nil {
		b.Fatal(err)
	}
	f := &benchFixture{store: s, auth: identity.NewAuthenticator(s, nil), token: res.Token}
	stop, err := f.auth.Listen(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(stop)
	cat := registry.New().CatalogBody()
	api, err := New(Deps{Auth: f.auth, Directory: identity.NewDirectory(s, f.auth, identity.DirectoryOptions{}), CatalogBody: cat})
	if err != nil {
		b.Fatal(err)
	}
	f.api, f.body = api, cat
	return f
}

// bareAuth is baseline (a): the same token check, the same bytes, nothing else.
func (f *benchFixture) bareAuth() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := f.auth.Member(r.Context(), identity.BearerToken(r.Header.Get("Authorization"))); err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", contentTypeJSON)
		_, _ = w.Write(f.body)
	})
}

// bareBytes is baseline (b): the bytes with no check.
func (f *benchFixture) bareBytes() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentTypeJSON)
		_, _ = w.Write(f.body)
	})
}

// runLoad serves h on loopback and issues b.N authenticated GETs from conc goroutines, returning
// the time per request and the 99th percentile latency.
func runLoad(b *testing.B, h http.Handler, token string, conc int) benchResult {
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64, DisableCompression: true}}
	defer client.CloseIdleConnections()
	url := srv.URL + "/agent_api/v1/tools"
	get := func() time.Duration {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Error(err)
			return 0
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Errorf("status %d", resp.StatusCode)
		}
		return time.Since(start)
	}
	get() // warm the connection
	var mu sync.Mutex
	var lat []time.Duration
	b.SetParallelism((conc + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	if conc == 1 {
		lat = make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			lat = append(lat, get())
		}
	} else {
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			local := make([]time.Duration, 0, 1024)
			for pb.Next() {
				local = append(local, get())
			}
			mu.Lock()
			lat = append(lat, local...)
			mu.Unlock()
		})
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	var p99 time.Duration
	if len(lat) > 0 {
		p99 = lat[(len(lat)*99)/100]
	}
	elapsed := b.Elapsed()
	r := benchResult{nsPerOp: float64(elapsed.Nanoseconds()) / float64(b.N), p99: p99}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
	return r
}
