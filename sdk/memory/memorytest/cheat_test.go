package memorytest_test

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/memory/memorytest"
)

// A cheater is a store that breaks one promise of the Provider contract while keeping the rest.
// Each must fail the kit at the cases named, which is what makes the kit worth passing.
type cheater struct {
	name  string
	cases []string // case ids that must fail
	wrap  func(honest *memorytest.MemStore) memory.Provider
}

var cheaters = []cheater{
	{"unsorted-listing", []string{"P04", "P06"}, func(h *memorytest.MemStore) memory.Provider { return unsortedLs{h} }},
	{"like-prefix", []string{"P06", "P23"}, func(h *memorytest.MemStore) memory.Provider { return likePrefix{h} }},
	{"lost-update", []string{"P29"}, func(h *memorytest.MemStore) memory.Provider { return unlockedEdit{h} }},
	{"torn-replace", []string{"P32"}, func(h *memorytest.MemStore) memory.Provider { return tornReplace{h} }},
	{"first-of-many", []string{"P13", "P14", "T17"}, func(h *memorytest.MemStore) memory.Provider { return firstOccurrence{h} }},
	{"no-cap", []string{"P08", "P28", "T14"}, func(h *memorytest.MemStore) memory.Provider { return noCap{h} }},
	{"own-clock", []string{"P02", "P03", "T03"}, func(h *memorytest.MemStore) memory.Provider { return ownClock{h} }},
	{"no-deadline", []string{"P24", "T19"}, func(h *memorytest.MemStore) memory.Provider { return noDeadline{h} }},
	{"dropped-replace", []string{"P03", "T07"}, func(h *memorytest.MemStore) memory.Provider { return &droppedReplace{MemStore: h} }},
	{"amnesia", []string{"P31"}, func(h *memorytest.MemStore) memory.Provider { return amnesia{h} }},
	{"case-folding", []string{"P04"}, func(h *memorytest.MemStore) memory.Provider { return caseFold{h} }},
	{"partial-failed-edit", []string{"P16"}, func(h *memorytest.MemStore) memory.Provider { return partialEdit{h} }},
	{"greedy-grep", []string{"P21", "T05"}, func(h *memorytest.MemStore) memory.Provider { return greedyGrep{h} }},
	{"unconditional", []string{"P35", "P36"}, func(h *memorytest.MemStore) memory.Provider { return unconditional{h} }},
	{"id-per-write", []string{"P34"}, func(h *memorytest.MemStore) memory.Provider { return idPerWrite{h} }},
}

const cheaterEnv = "MEMORYTEST_CHEATER"

// TestKitCatchesCheaters runs the kit's targeted cases in a child test process against each
// cheater and asserts that exactly those cases fail; an honest store passes the same cases.
func TestKitCatchesCheaters(t *testing.T) {
	if name := os.Getenv(cheaterEnv); name != "" {
		runAgainst(t, name)
		return
	}
	t.Parallel()
	var all []string
	for _, c := range cheaters {
		all = append(all, c.cases...)
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, failed := child(t, c.name, c.cases)
			if !failed {
				t.Fatalf("the kit passed the %s cheater:\n%s", c.name, out)
			}
			for _, id := range c.cases {
				if !regexp.MustCompile(`--- FAIL: TestKitCatchesCheaters/` + id + `_`).MatchString(out) {
					t.Errorf("case %s did not fail against the %s cheater:\n%s", id, c.name, out)
				}
			}
		})
	}
	t.Run("honest", func(t *testing.T) {
		t.Parallel()
		slices.Sort(all)
		if out, failed := child(t, "honest", slices.Compact(all)); failed {
			t.Fatalf("the targeted cases fail on the honest store:\n%s", out)
		}
	})
}

// child runs the named cases of this test in a new process against the named store.
func child(t *testing.T, store string, cases []string) (string, bool) {
	t.Helper()
	run := `^TestKitCatchesCheaters$/^(` + strings.Join(cases, "|") + `)_`
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run="+run, "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), cheaterEnv+"="+store)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if _, exited := err.(*exec.ExitError); !exited {
			t.Fatalf("child process: %v", err)
		}
	}
	if strings.Contains(string(out), "panic:") {
		t.Fatalf("child process panicked:\n%s", out)
	}
	return string(out), err != nil
}

func runAgainst(t *testing.T, name string) {
	factory := func(t *testing.T) memory.Provider { return memorytest.NewMemStore() }
	for _, c := range cheaters {
		if c.name == name {
			factory = func(t *testing.T) memory.Provider { return c.wrap(memorytest.NewMemStore()) }
		}
	}
	memorytest.RunProvider(t, factory)
	memorytest.RunTools(t, factory)
}

// unsortedLs lists in reverse byte order.
type unsortedLs struct{ *memorytest.MemStore }

func (c unsortedLs) Ls(ctx context.Context, req *memory.LsRequest) (*memory.LsResponse, error) {
	resp, err := c.MemStore.Ls(ctx, req)
	if err == nil {
		slices.Reverse(resp.Entries)
	}
	return resp, err
}

// likePrefix treats % and _ in a prefix as SQL LIKE wildcards, as an unescaped LIKE would.
type likePrefix struct{ *memorytest.MemStore }

func likeFilter(prefix string) func(string) bool {
	quoted := regexp.QuoteMeta(prefix)
	quoted = strings.NewReplacer("%", ".*", "_", ".").Replace(quoted)
	re := regexp.MustCompile("^" + quoted)
	return re.MatchString
}

func (c likePrefix) Ls(ctx context.Context, req *memory.LsRequest) (*memory.LsResponse, error) {
	all, err := c.MemStore.Ls(ctx, &memory.LsRequest{Scope: req.Scope})
	if err != nil {
		return nil, err
	}
	match := likeFilter(req.NamePrefix)
	out := &memory.LsResponse{}
	for _, e := range all.Entries {
		if match(e.Name) {
			out.Entries = append(out.Entries, e)
		}
	}
	return out, nil
}

func (c likePrefix) Grep(ctx context.Context, req *memory.GrepRequest) (*memory.GrepResponse, error) {
	all := *req
	all.NamePrefix, all.Limit = "", memory.MaxGrepLimit
	resp, err := c.MemStore.Grep(ctx, &all)
	if err != nil {
		return nil, err
	}
	match := likeFilter(req.NamePrefix)
	out := &memory.GrepResponse{}
	for _, m := range resp.Matches {
		if match(m.Name) {
			out.Matches = append(out.Matches, m)
		}
	}
	return out, nil
}

// unlockedEdit reads, thinks, and writes the whole document back without holding a lock.
type unlockedEdit struct{ *memorytest.MemStore }

func (c unlockedEdit) Edit(ctx context.Context, req *memory.EditRequest) (*memory.EditResponse, error) {
	cur, err := c.MemStore.Read(ctx, &memory.ReadRequest{Scope: req.Scope, Name: req.Name})
	if err != nil {
		return nil, err
	}
	next, err := memory.ApplyEdit(cur.Content, req.OldText, req.NewText)
	if err != nil {
		return nil, err
	}
	time.Sleep(2 * time.Millisecond)
	resp, err := c.MemStore.Write(ctx, &memory.WriteRequest{Scope: req.Scope, Name: req.Name, Content: next, WrittenAt: req.WrittenAt})
	if err != nil {
		return nil, err
	}
	return &memory.EditResponse{Entry: resp.Entry}, nil
}

// tornReplace writes a replacement in two steps, so a reader can see the first half alone.
type tornReplace struct{ *memorytest.MemStore }

func (c tornReplace) Write(ctx context.Context, req *memory.WriteRequest) (*memory.WriteResponse, error) {
	if _, err := c.MemStore.Read(ctx, &memory.ReadRequest{Scope: req.Scope, Name: req.Name}); err == nil {
		half := *req
		half.Content = req.Content[:len(req.Content)/2]
		if _, err := c.MemStore.Write(ctx, &half); err != nil {
			return nil, err
		}
		time.Sleep(200 * time.Microsecond)
		resp, err := c.MemStore.Write(ctx, req)
		if err == nil {
			resp.Entry.Version--
		}
		return resp, err
	}
	return c.MemStore.Write(ctx, req)
}

// firstOccurrence replaces the first occurrence even when the passage occurs again.
type firstOccurrence struct{ *memorytest.MemStore }

func (c firstOccurrence) Edit(ctx context.Context, req *memory.EditRequest) (*memory.EditResponse, error) {
	cur, err := c.MemStore.Read(ctx, &memory.ReadRequest{Scope: req.Scope, Name: req.Name})
	if err != nil || !strings.Contains(cur.Content, req.OldText) {
		return c.MemStore.Edit(ctx, req)
	}
	resp, err := c.MemStore.Write(ctx, &memory.WriteRequest{Scope: req.Scope, Name: req.Name, Content: strings.Replace(cur.Content, req.OldText, req.NewText, 1), WrittenAt: req.WrittenAt})
	if err != nil {
		return nil, err
	}
	return &memory.EditResponse{Entry: resp.Entry}, nil
}

// noCap spreads an anchor over two hidden anchors so that it can hold 128 documents.
type noCap struct{ *memorytest.MemStore }

func (c noCap) Write(ctx context.Context, req *memory.WriteRequest) (*memory.WriteResponse, error) {
	resp, err := c.MemStore.Write(ctx, req)
	if err != nil && strings.Contains(err.Error(), memory.ErrFull.Error()) {
		spill := *req
		spill.Scope.OwnerID = "ffffffff-ffff-ffff-ffff-ffffffffffff"
		return c.MemStore.Write(ctx, &spill)
	}
	return resp, err
}

func (c noCap) Ls(ctx context.Context, req *memory.LsRequest) (*memory.LsResponse, error) {
	resp, err := c.MemStore.Ls(ctx, req)
	if err != nil {
		return nil, err
	}
	spill := *req
	spill.Scope.OwnerID = "ffffffff-ffff-ffff-ffff-ffffffffffff"
	more, _ := c.MemStore.Ls(ctx, &spill)
	resp.Entries = append(resp.Entries, more.Entries...)
	slices.SortFunc(resp.Entries, func(a, b memory.Entry) int { return strings.Compare(a.Name, b.Name) })
	return resp, nil
}

// ownClock stamps documents with its own clock instead of the request's time.
type ownClock struct{ *memorytest.MemStore }

func (c ownClock) Write(ctx context.Context, req *memory.WriteRequest) (*memory.WriteResponse, error) {
	r := *req
	r.WrittenAt = time.Now()
	return c.MemStore.Write(ctx, &r)
}

// noDeadline searches however long it takes.
type noDeadline struct{ *memorytest.MemStore }

func (c noDeadline) Grep(ctx context.Context, req *memory.GrepRequest) (*memory.GrepResponse, error) {
	return c.MemStore.Grep(context.WithoutCancel(ctx), req)
}

// droppedReplace acknowledges replaces without storing them.
type droppedReplace struct{ *memorytest.MemStore }

func (c *droppedReplace) Write(ctx context.Context, req *memory.WriteRequest) (*memory.WriteResponse, error) {
	if cur, err := c.MemStore.Read(ctx, &memory.ReadRequest{Scope: req.Scope, Name: req.Name}); err == nil {
		e := cur.Entry
		e.Version++
		e.SizeBytes = int64(len(req.Content))
		e.WrittenAt = memory.StoredTime(req.WrittenAt)
		return &memory.WriteResponse{Entry: e}, nil
	}
	return c.MemStore.Write(ctx, req)
}

// amnesia reopens empty: nothing it held survives a restart.
type amnesia struct{ *memorytest.MemStore }

func (amnesia) Reopen(ctx context.Context) (memory.Provider, error) {
	return memorytest.NewMemStore(), nil
}

// caseFold treats names case-insensitively.
type caseFold struct{ *memorytest.MemStore }

func fold(name string) string { return strings.ToLower(name) }

func (c caseFold) Write(ctx context.Context, req *memory.WriteRequest) (*memory.WriteResponse, error) {
	r := *req
	r.Name = fold(r.Name)
	return c.MemStore.Write(ctx, &r)
}

func (c caseFold) Read(ctx context.Context, req *memory.ReadRequest) (*memory.ReadResponse, error) {
	r := *req
	r.Name = fold(r.Name)
	return c.MemStore.Read(ctx, &r)
}

// partialEdit stores an over-long edit result cut to the limit instead of refusing it.
type partialEdit struct{ *memorytest.MemStore }

func (c partialEdit) Edit(ctx context.Context, req *memory.EditRequest) (*memory.EditResponse, error) {
	resp, err := c.MemStore.Edit(ctx, req)
	if err == nil || !strings.Contains(err.Error(), memory.ErrTooLarge.Error()) {
		return resp, err
	}
	cur, rerr := c.MemStore.Read(ctx, &memory.ReadRequest{Scope: req.Scope, Name: req.Name})
	if rerr != nil {
		return nil, rerr
	}
	next := strings.Replace(cur.Content, req.OldText, req.NewText, 1)[:memory.MaxDocumentBytes]
	w, werr := c.MemStore.Write(ctx, &memory.WriteRequest{Scope: req.Scope, Name: req.Name, Content: next, WrittenAt: req.WrittenAt})
	if werr != nil {
		return nil, werr
	}
	return &memory.EditResponse{Entry: w.Entry}, nil
}

// greedyGrep answers every match and never says whether one lies beyond the limit.
type greedyGrep struct{ *memorytest.MemStore }

func (c greedyGrep) Grep(ctx context.Context, req *memory.GrepRequest) (*memory.GrepResponse, error) {
	r := *req
	r.Limit = memory.MaxGrepLimit
	resp, err := c.MemStore.Grep(ctx, &r)
	if err != nil {
		return nil, err
	}
	if len(resp.Matches) > req.Limit {
		resp.Matches = resp.Matches[:req.Limit]
	}
	resp.Truncated = false
	return resp, nil
}

// unconditional ignores every Expect: a store of an earlier minor, answering a 1.3 host.
type unconditional struct{ *memorytest.MemStore }

func (c unconditional) Write(ctx context.Context, req *memory.WriteRequest) (*memory.WriteResponse, error) {
	r := *req
	r.Expect = nil
	return c.MemStore.Write(ctx, &r)
}

func (c unconditional) Edit(ctx context.Context, req *memory.EditRequest) (*memory.EditResponse, error) {
	r := *req
	r.Expect = nil
	return c.MemStore.Edit(ctx, &r)
}

func (c unconditional) Delete(ctx context.Context, req *memory.DeleteRequest) (*memory.DeleteResponse, error) {
	r := *req
	r.Expect = nil
	return c.MemStore.Delete(ctx, &r)
}

// idPerWrite answers a new id from every write, as if each replace made another document.
type idPerWrite struct{ *memorytest.MemStore }

func (c idPerWrite) Write(ctx context.Context, req *memory.WriteRequest) (*memory.WriteResponse, error) {
	resp, err := c.MemStore.Write(ctx, req)
	if err == nil {
		resp.Entry.ID = memory.NewID()
	}
	return resp, err
}
