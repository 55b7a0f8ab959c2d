package uploads

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// TestMemberVisibility walks the readers (docs/api.md#uploads): the creator; members of a workspace
// where a row binds the upload; nobody else, all answered not_found alike.
func TestMemberVisibility(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newWorld(t, s)
		ctx := context.Background()
		mine := w.ingest(t, MemberCreator(w.alice), "a.txt", []byte("alice's"))
		capture := w.ingest(t, ExecutorCreator(w.r1), "c.png", []byte("\x89PNG\r\n\x1a\n"))

		type reader struct {
			name string
			p    *identity.Principal
		}
		readers := []reader{{"alice", w.alice}, {"bob", w.bob}, {"carol", w.carol}, {"bot", w.bot}}
		check := func(stage string, u *Upload, want map[string]bool) {
			t.Helper()
			for _, r := range readers {
				got, err := w.svc.ForMember(ctx, r.p, u.PublicID)
				switch {
				case want[r.name] && err != nil:
					t.Errorf("%s: %s cannot read %s: %v", stage, r.name, u.Filename, err)
				case want[r.name] && got.PublicID != u.PublicID:
					t.Errorf("%s: %s read another upload", stage, r.name)
				case !want[r.name] && !isCode(err, "not_found"):
					t.Errorf("%s: %s reading %s: %v, want not_found", stage, r.name, u.Filename, err)
				}
			}
		}
		check("unbound", mine, map[string]bool{"alice": true})
		check("unbound capture", capture, map[string]bool{})

		// Bound by a task result in w1: every member of w1 (users and its agent) reads it.
		w.bind(t, Target{Kind: TargetTaskResult, ID: 7, WorkspaceID: w.w1}, capture.PublicID)
		check("capture bound in w1", capture, map[string]bool{"alice": true, "carol": true, "bot": true})
		// Bound by a turn input in w2 as well: bob joins.
		w.bind(t, Target{Kind: TargetTurnInput, ID: 3, WorkspaceID: w.w2}, mine.PublicID)
		check("upload bound in w2", mine, map[string]bool{"alice": true, "bob": true, "carol": true})

		// The descriptor says bound and no longer expires.
		got, err := w.svc.ForMember(ctx, w.alice, mine.PublicID)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := got.ExpiresAt(); !got.Bound || ok {
			t.Fatalf("bound upload: bound %v, expires %v", got.Bound, ok)
		}

		// Executors read their own captures only.
		if _, err := w.svc.ForExecutor(ctx, w.r1, capture.PublicID); err != nil {
			t.Fatalf("r1 reading its capture: %v", err)
		}
		for _, e := range []*identity.Executor{w.p1, w.r2} {
			if _, err := w.svc.ForExecutor(ctx, e, capture.PublicID); !isCode(err, "not_found") {
				t.Fatalf("%s reading r1's capture: %v, want not_found", e.DisplayName, err)
			}
		}
		if _, err := w.svc.ForExecutor(ctx, w.r1, mine.PublicID); !isCode(err, "not_found") {
			t.Fatalf("r1 reading a member upload: %v", err)
		}

		// Unknown, and malformed ids.
		if _, err := w.svc.ForMember(ctx, w.alice, store.NewPublicID()); !isCode(err, "not_found") {
			t.Fatalf("unknown id: %v", err)
		}
		for _, bad := range []string{"x", "", "6f1b2c3d-0000-4000-8000-00000000aa0", "6f1b2c3d_0000-4000-8000-00000000aa01"} {
			if _, err := w.svc.ForMember(ctx, w.alice, bad); !isCode(err, "parameter_invalid") {
				t.Fatalf("malformed id %q: %v, want parameter_invalid", bad, err)
			}
			if _, err := w.svc.ForExecutor(ctx, w.r1, bad); !isCode(err, "parameter_invalid") {
				t.Fatalf("malformed id %q on the executor plane: %v", bad, err)
			}
		}
		// An uppercase spelling names the same upload.
		if _, err := w.svc.ForMember(ctx, w.alice, strings.ToUpper(mine.PublicID)); err != nil {
			t.Fatalf("uppercase id: %v", err)
		}
	})
}

// denyAll is a Visibility that admits nobody but creators.
type denyAll struct{ asked int }

func (d *denyAll) Visible(context.Context, store.Querier, *identity.Principal, *Upload) (bool, error) {
	d.asked++
	return false, nil
}

func TestVisibilityHook(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t, store.SQLite)
	w := newWorld(t, s)
	hook := &denyAll{}
	svc, err := New(s, Options{DetectContentType: w.svc.detect, Now: w.clock, Visibility: hook})
	if err != nil {
		t.Fatal(err)
	}
	u := w.ingest(t, MemberCreator(w.alice), "a", []byte("a"))
	w.bind(t, Target{Kind: TargetTaskResult, ID: 1, WorkspaceID: w.w1}, u.PublicID)
	if _, err := svc.ForMember(context.Background(), w.carol, u.PublicID); !isCode(err, "not_found") || hook.asked != 1 {
		t.Fatalf("hook denying: %v (asked %d)", err, hook.asked)
	}
	if _, err := svc.ForMember(context.Background(), w.alice, u.PublicID); err != nil || hook.asked != 1 {
		t.Fatalf("the creator needs no hook: %v (asked %d)", err, hook.asked)
	}
}

func TestOwnership(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newWorld(t, s)
		ctx := context.Background()
		r1a := w.ingest(t, ExecutorCreator(w.r1), "a", []byte("a")).PublicID
		r1b := w.ingest(t, ExecutorCreator(w.r1), "b", []byte("b")).PublicID
		p1 := w.ingest(t, ExecutorCreator(w.p1), "p", []byte("p")).PublicID
		alice := w.ingest(t, MemberCreator(w.alice), "m", []byte("m")).PublicID
		bot := w.ingest(t, MemberCreator(w.bot), "n", []byte("n")).PublicID
		unknown := store.NewPublicID()
		all := []string{r1a, r1b, p1, alice, bot, unknown, "not-an-id", strings.ToUpper(r1b)}

		inTx := func(f func(tx *store.Tx) []string) []string {
			var out []string
			if err := s.Write(ctx, func(tx *store.Tx) error { out = f(tx); return nil }); err != nil {
				t.Fatal(err)
			}
			sort.Strings(out)
			return out
		}
		sorted := func(ids ...string) []string { sort.Strings(ids); return ids }
		cases := []struct {
			name string
			got  func(tx *store.Tx) ([]string, error)
			want []string
		}{
			{"r1 captures", func(tx *store.Tx) ([]string, error) { return OwnedCaptures(ctx, tx, w.r1.ID, all) }, sorted(r1a, r1b)},
			{"p1 captures", func(tx *store.Tx) ([]string, error) { return OwnedCaptures(ctx, tx, w.p1.ID, all) }, sorted(p1)},
			{"r2 captures", func(tx *store.Tx) ([]string, error) { return OwnedCaptures(ctx, tx, w.r2.ID, all) }, nil},
			{"alice inputs", func(tx *store.Tx) ([]string, error) { return OwnedInputs(ctx, tx, w.alice, all) }, sorted(alice)},
			{"bot inputs", func(tx *store.Tx) ([]string, error) { return OwnedInputs(ctx, tx, w.bot, all) }, sorted(bot)},
			{"carol inputs", func(tx *store.Tx) ([]string, error) { return OwnedInputs(ctx, tx, w.carol, all) }, nil},
			{"nothing asked", func(tx *store.Tx) ([]string, error) { return OwnedCaptures(ctx, tx, w.r1.ID, nil) }, nil},
		}
		for _, c := range cases {
			got := inTx(func(tx *store.Tx) []string {
				ids, err := c.got(tx)
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				return ids
			})
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", c.name, diff)
			}
		}

		// The operation-owning exception: uploads bound to the children's settled results.
		w.bind(t, Target{Kind: TargetTaskResult, ID: 41, WorkspaceID: w.w1}, p1)
		w.bind(t, Target{Kind: TargetTaskInput, ID: 42, WorkspaceID: w.w1}, alice)
		got := inTx(func(tx *store.Tx) []string {
			ids, err := BoundToResults(ctx, tx, []int64{41, 42, 43}, all)
			if err != nil {
				t.Fatal(err)
			}
			return ids
		})
		if diff := cmp.Diff(sorted(p1), got); diff != "" {
			t.Errorf("bound to the children's results (-want +got):\n%s", diff)
		}
	})
}

func TestCheckInputs(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newWorld(t, s)
		ctx := context.Background()
		own := w.ingest(t, MemberCreator(w.alice), "m", []byte("m")).PublicID
		other := w.ingest(t, MemberCreator(w.carol), "c", []byte("c")).PublicID
		capture := w.ingest(t, ExecutorCreator(w.r1), "r", []byte("r")).PublicID
		cases := []struct {
			name string
			ids  []string
			path string // "" means admitted
		}{
			{"own", []string{own}, ""},
			{"own twice", []string{own, own}, ""},
			{"none", nil, ""},
			{"another member's", []string{own, other}, "message.attachments[1]"},
			{"a capture", []string{capture}, "message.attachments[0]"},
			{"unknown", []string{own, own, store.NewPublicID()}, "message.attachments[2]"},
			{"malformed", []string{"nope"}, "message.attachments[0]"},
		}
		for _, c := range cases {
			err := s.Write(ctx, func(tx *store.Tx) error {
				return CheckInputs(ctx, tx, w.alice, c.ids, "message.attachments")
			})
			if c.path == "" {
				if err != nil {
					t.Errorf("%s: %v", c.name, err)
				}
				continue
			}
			if !isCode(err, CodeUnknownInputUpload) {
				t.Errorf("%s: %v, want %s", c.name, err, CodeUnknownInputUpload)
				continue
			}
			r, _ := refusal.As(err)
			if p, _ := r.Get("path"); p != c.path || r.Kind != refusal.Unprocessable {
				t.Errorf("%s: path %v kind %v, want %s and 422", c.name, p, r.Kind, c.path)
			}
		}
	})
}

func TestBind(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newWorld(t, s)
		ctx := context.Background()
		a := w.ingest(t, ExecutorCreator(w.r1), "a", []byte("a"))
		b := w.ingest(t, ExecutorCreator(w.r1), "b", []byte("b"))
		target := Target{Kind: TargetTaskResult, ID: 9, WorkspaceID: w.w1}
		// All or nothing: one unknown id binds none.
		err := s.Write(ctx, func(tx *store.Tx) error {
			return Bind(ctx, tx, target, []string{a.PublicID, store.NewPublicID()}, w.clock())
		})
		if !errors.Is(err, ErrUnbindable) {
			t.Fatalf("binding an unknown id: %v", err)
		}
		for _, bad := range [][]string{{"x"}} {
			err := s.Write(ctx, func(tx *store.Tx) error { return Bind(ctx, tx, target, bad, w.clock()) })
			if !errors.Is(err, ErrUnbindable) {
				t.Fatalf("binding %v: %v", bad, err)
			}
		}
		if err := s.Write(ctx, func(tx *store.Tx) error {
			return Bind(ctx, tx, Target{Kind: "nope", ID: 1, WorkspaceID: w.w1}, []string{a.PublicID}, w.clock())
		}); err == nil {
			t.Fatal("an unknown target kind bound")
		}
		if bs, _ := store.UploadBindings(ctx, s.Reader(), a.ID); len(bs) != 0 {
			t.Fatalf("refused binds left %v", bs)
		}
		// Bind twice, and one upload to several rows.
		w.bind(t, target, a.PublicID, b.PublicID, a.PublicID)
		w.bind(t, target, a.PublicID)
		w.bind(t, Target{Kind: TargetTurnInput, ID: 9, WorkspaceID: w.w2}, a.PublicID)
		bs, err := store.UploadBindings(ctx, s.Reader(), a.ID)
		if err != nil {
			t.Fatal(err)
		}
		sort.Slice(bs, func(i, j int) bool { return bs[i].TargetKind < bs[j].TargetKind })
		want := []store.UploadBinding{
			{UploadID: a.ID, TargetKind: TargetTaskResult, TargetID: 9, WorkspaceID: w.w1, BoundAt: store.Millis(w.clock())},
			{UploadID: a.ID, TargetKind: TargetTurnInput, TargetID: 9, WorkspaceID: w.w2, BoundAt: store.Millis(w.clock())},
		}
		if diff := cmp.Diff(want, bs); diff != "" {
			t.Fatalf("bindings (-want +got):\n%s", diff)
		}
		m, err := w.svc.Lookup(ctx, s.Reader(), []string{a.PublicID, b.PublicID, "junk", store.NewPublicID()})
		if err != nil || len(m) != 2 || !m[a.PublicID].Bound || !m[b.PublicID].Bound {
			t.Fatalf("lookup after binding: %v %v", m, err)
		}
	})
}

// TestCommitOwnership runs the commit door's order inside one transaction: the envelope asks
// OwnedCaptures which linked uploads the committer may bind (unknown_result_upload, whole or
// nothing, otherwise), then Bind binds exactly what it validated.
func TestCommitOwnership(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newWorld(t, s)
		ctx := context.Background()
		own := w.ingest(t, ExecutorCreator(w.r1), "own.png", []byte("\x89PNG\r\n\x1a\n"))
		foreign := w.ingest(t, ExecutorCreator(w.p1), "p.txt", []byte("p"))
		member := w.ingest(t, MemberCreator(w.alice), "m.txt", []byte("m"))
		link := func(u *Upload) string {
			return `{"type":"resource_link","uri":"` + u.URI() + `","name":"` + u.Filename + `"}`
		}
		commit := func(blocks ...string) error {
			body := `{"claim_token":"nxc_x","content":[{"type":"text","text":"done"},` + strings.Join(blocks, ",") + `]}`
			return s.Write(ctx, func(tx *store.Tx) error {
				members, err := jsonwire.SplitObject([]byte(body))
				if err != nil {
					return err
				}
				r, err := envelope.Validate(envelope.Decode(members), func(ids []string) ([]string, error) {
					return OwnedCaptures(ctx, tx, w.r1.ID, ids)
				})
				if err != nil {
					return err
				}
				return Bind(ctx, tx, Target{Kind: TargetTaskResult, ID: 5, WorkspaceID: w.w1}, r.Uploads, w.clock())
			})
		}
		for _, c := range []struct {
			name   string
			blocks []string
			path   string
		}{
			{"another executor's capture", []string{link(own), link(foreign)}, "content[2].uri"},
			{"a member upload", []string{link(member), link(own)}, "content[1].uri"},
		} {
			err := commit(c.blocks...)
			r, ok := refusal.As(err)
			if !ok || r.Code != envelope.CodeUnknownResultUpload {
				t.Fatalf("%s: %v, want unknown_result_upload", c.name, err)
			}
			if p, _ := r.Get("path"); p != c.path {
				t.Fatalf("%s: path %v, want %s", c.name, p, c.path)
			}
		}
		for _, u := range []*Upload{own, foreign, member} {
			if bs, _ := store.UploadBindings(ctx, s.Reader(), u.ID); len(bs) != 0 {
				t.Fatalf("a refused commit bound %s", u.Filename)
			}
		}
		if err := commit(link(own), link(own)); err != nil {
			t.Fatal(err)
		}
		if got, err := w.svc.ForExecutor(ctx, w.r1, own.PublicID); err != nil || !got.Bound {
			t.Fatalf("after the commit: %+v %v", got, err)
		}
	})
}
