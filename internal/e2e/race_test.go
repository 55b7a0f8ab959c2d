package e2e

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/client"
)

// racers is how many goroutines race for one row: well above the store's pool and the kernel's
// workers, so that claims really overlap.
const racers = 24

// TestRacingRunners: many runners race for one pool row over HTTP, on each store. Exactly one
// claim wins, the others answer already_claimed; then every racer commits at once, the winner's
// token in half of them (a retrying winner) and a made-up one in the rest: exactly one commit
// applies, the winner's repeats are idle, the winner's made-up ones are stale_claim, and every
// other pool member's is not_found (a claim answers its claimant only).
func TestRacingRunners(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := newPlane(t, d)
			var providers []*executor
			for i := 0; i < racers/3; i++ {
				e := p.executor("tool_provider", fmt.Sprintf("p%d", i))
				p.announce(e, tool("lookup", 0))
				providers = append(providers, e)
			}
			for round := 0; round < 3; round++ {
				run := p.modelRun("mock/scripted", "!mock\nround 1\ncall lookup {}\nround 2\nsay {{last_result}}", []any{plain("lookup")}, nil, "bypass", nil)
				p.inboxRow(providers[0], run, "r2t0")
				var wg sync.WaitGroup
				var mu sync.Mutex
				var tokens []string
				var winners []int
				start := make(chan struct{})
				for i := 0; i < racers; i++ {
					wg.Add(1)
					go func(i int) {
						defer wg.Done()
						<-start
						cl, err := providers[i%len(providers)].c.ClaimWork(p.ctx, run, "r2t0")
						var ce *client.Error
						switch {
						case err == nil:
							mu.Lock()
							tokens = append(tokens, cl.Claim.ClaimToken)
							winners = append(winners, i)
							mu.Unlock()
						case errors.As(err, &ce) && ce.Status == 409 && ce.Code == "already_claimed":
						default:
							t.Errorf("racer %d: %v", i, err)
						}
					}(i)
				}
				close(start)
				wg.Wait()
				if len(tokens) != 1 {
					t.Fatalf("round %d: %d claims won", round, len(tokens))
				}
				winner := providers[winners[0]%len(providers)]
				// A wrong token from the claimant is stale_claim; any token from another pool
				// member is not_found: the claim is the claimant's alone.
				var applied, idle, stale, notFound, wantStale int
				for i := 1; i < racers; i += 2 {
					if providers[i%len(providers)] == winner {
						wantStale++
					}
				}
				start = make(chan struct{})
				for i := 0; i < racers; i++ {
					wg.Add(1)
					go func(i int) {
						defer wg.Done()
						tok, c := "nxc_not_a_claim", providers[i%len(providers)].c
						if i%2 == 0 {
							tok, c = tokens[0], winner.c
						}
						<-start
						res, err := c.Commit(p.ctx, run, "r2t0", tok, &client.Result{Content: fmt.Sprintf("racer %d", i)})
						mu.Lock()
						defer mu.Unlock()
						var ce *client.Error
						switch {
						case err == nil && res.Applied:
							applied++
						case err == nil:
							idle++
						case errors.As(err, &ce) && ce.Status == 409 && ce.Code == "stale_claim":
							stale++
						case errors.As(err, &ce) && ce.Status == 404 && ce.Code == "not_found":
							notFound++
						default:
							t.Errorf("racer %d: %v", i, err)
						}
					}(i)
				}
				close(start)
				wg.Wait()
				if applied != 1 || idle != racers/2-1 || stale != wantStale || notFound != racers/2-wantStale {
					t.Fatalf("round %d: applied %d, idle %d, stale %d, not found %d", round, applied, idle, stale, notFound)
				}
				p.waitRunStatus(run, "completed")
			}
		})
	}
}
