package wire

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/model"
)

func calls(ids ...string) model.Entry {
	e := model.Entry{Role: model.RoleAssistant}
	for _, id := range ids {
		e.ToolCalls = append(e.ToolCalls, model.ToolCall{ID: id, Name: "read_file", Arguments: "{}"})
	}
	return e
}

func result(id string) model.Entry {
	return model.Entry{Role: model.RoleTool, ToolCallID: id, Name: "read_file"}
}

func TestWireIDs(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 60)
	entries := []model.Entry{
		{Role: model.RoleUser},
		calls("call_a1", "read_file#a.b/c", long, ""),
		result("call_a1"), result("read_file#a.b/c"), result(long), result(""),
		calls("mock_r1_0", "mock_r1_0"),
		result("mock_r1_0"), result("mock_r1_0"),
	}
	ids, err := WireIDs(entries, MaxOpenAIIDLen)
	if err != nil {
		t.Fatal(err)
	}
	got := ids.Calls[1]
	if got[0] != "call_a1" {
		t.Errorf("a fitting id changed: %s", got[0])
	}
	kc := regexp.MustCompile(`^kc_[0-9a-f]{24}$`)
	if ids.Calls[6][0] != "mock_r1_0" {
		t.Errorf("the first of two repeated ids changed: %s", ids.Calls[6][0])
	}
	for _, id := range append(got[1:], ids.Calls[6][1]) {
		if !kc.MatchString(id) {
			t.Errorf("misfit id %q is not a kc_ key", id)
		}
	}
	if ids.Calls[6][0] == ids.Calls[6][1] {
		t.Error("repeated ids stayed repeated")
	}
	for i, c := range []int{2, 3, 4, 5} {
		if ids.Tools[c] != got[i] {
			t.Errorf("tool entry %d carries %s, its call %s", c, ids.Tools[c], got[i])
		}
	}
	again, _ := WireIDs(entries, MaxOpenAIIDLen)
	if again.Calls[1][2] != got[2] {
		t.Error("ids are not deterministic")
	}
	// The anthropic rule takes a 60-character id as it is.
	an, _ := WireIDs(entries, MaxAnthropicIDLen)
	if an.Calls[1][2] != long {
		t.Errorf("anthropic replaced a 60-character id: %s", an.Calls[1][2])
	}
	_, err = WireIDs([]model.Entry{calls("x"), result("y")}, MaxOpenAIIDLen)
	var me *model.Error
	if !errors.As(err, &me) || me.Key != model.KeyProviderError || me.Detail != "sealed request pairs tool entry 1 with call x" {
		t.Errorf("mispaired: %v", err)
	}
}

// TestWireIDsProperty: over random histories every tool entry answers a call of the assistant
// entry before it, every id fits the wire and is unique in the request, and the ids are stable.
func TestWireIDsProperty(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(3, 9))
	alphabet := "ab_-#/. 0123456789"
	for n := 0; n < 300; n++ {
		var entries []model.Entry
		for r := 0; r < 1+rnd.IntN(6); r++ {
			entries = append(entries, model.Entry{Role: model.RoleUser})
			var ids []string
			for c := 0; c < rnd.IntN(4); c++ {
				var b strings.Builder
				for k := rnd.IntN(70); k > 0; k-- {
					b.WriteByte(alphabet[rnd.IntN(len(alphabet))])
				}
				ids = append(ids, b.String())
			}
			entries = append(entries, calls(ids...))
			for _, id := range ids {
				entries = append(entries, result(id))
			}
		}
		for _, max := range []int{MaxOpenAIIDLen, MaxAnthropicIDLen} {
			got, err := WireIDs(entries, max)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for i, e := range entries {
				for j, id := range got.Calls[i] {
					if !regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`).MatchString(id) || len(id) > max || seen[id] {
						t.Fatalf("entry %d call %d: id %q", i, j, id)
					}
					seen[id] = true
				}
				if e.Role == model.RoleTool && got.Tools[i] == "" {
					t.Fatalf("tool entry %d has no wire id", i)
				}
			}
		}
	}
}

func TestObjectArguments(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in, raw, compact string
		object           bool
	}{
		{"", "{}", "{}", true},
		{"  ", "{}", "{}", true},
		{`{"path": "a.txt"}`, `{"path": "a.txt"}`, `{"path":"a.txt"}`, true},
		{`{"path":`, "{}", "{}", false},
		{`[1,2]`, "{}", "{}", false},
		{`"x"`, "{}", "{}", false},
		{`{"a":1} trailing`, "{}", "{}", false},
	}
	for _, c := range cases {
		raw, compact, object := ObjectArguments(c.in)
		if raw != c.raw || string(compact) != c.compact || object != c.object {
			t.Errorf("%q: %q %q %v", c.in, raw, compact, object)
		}
	}
	if got := CompactOrVerbatim([]byte(`{"path": "a`)); got != `{"path": "a` {
		t.Errorf("cut input: %q", got)
	}
	if got := CompactOrVerbatim([]byte(`{"path": "a"}`)); got != `{"path":"a"}` {
		t.Errorf("valid input: %q", got)
	}
	if got := CompactOrVerbatim(nil); got != "{}" {
		t.Errorf("empty input: %q", got)
	}
}

func TestSSEReader(t *testing.T) {
	t.Parallel()
	body := ": comment\r\nevent: message_start\r\ndata: {\"a\":1}\r\n\r\nid: 7\ndata: line1\ndata: line2\n\ndata: [DONE]"
	r := NewSSEReader(strings.NewReader(body))
	var got []string
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Name+"|"+string(ev.Data))
	}
	want := []string{`message_start|{"a":1}`, "|line1\nline2", "|[DONE]"}
	if strings.Join(got, ";") != strings.Join(want, ";") {
		t.Errorf("got %q", got)
	}
	// A body that ends inside a line gives that line's event marked Cut; one that ends at a line
	// end does not.
	for body, cut := range map[string]bool{"data: {\"a\":": true, "data: {\"a\":1}\n": false, "data: [DONE]": true} {
		ev, err := NewSSEReader(strings.NewReader(body)).Next()
		if err != nil || ev.Cut != cut {
			t.Errorf("%q: cut %v, %v; want cut %v", body, ev.Cut, err, cut)
		}
	}
	big := NewSSEReader(strings.NewReader("data: " + strings.Repeat("x", MaxBodyBytes) + "\n\n"))
	if _, err := big.Next(); !errors.Is(err, ErrBodyTooLarge) {
		t.Errorf("an oversized stream: %v", err)
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 1, 9, 30, 0, 0, time.UTC)
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	cases := []struct {
		h    http.Header
		want time.Duration
	}{
		{h("retry-after-ms", "1500", "retry-after", "9"), 1500 * time.Millisecond},
		{h("retry-after", "3"), 3 * time.Second},
		{h("retry-after", now.Add(7*time.Second).Format(http.TimeFormat)), 7 * time.Second},
		{h("retry-after", "soon"), 0},
		{h(), 0},
	}
	for i, c := range cases {
		if got := RetryAfter(c.h, now); got != c.want {
			t.Errorf("%d: %v, want %v", i, got, c.want)
		}
	}
	if v, set := ShouldRetry(h("x-should-retry", "false")); !set || v {
		t.Error("x-should-retry false")
	}
}

func TestScrubAndDetail(t *testing.T) {
	t.Parallel()
	s := NewScrubber([]string{"sk-secret", ""})
	if got := s.Detail("bad key sk-secret!" + strings.Repeat("é", 400)); strings.Contains(got, "sk-secret") || len(got) > 512 {
		t.Errorf("detail %q", got)
	}
	if got := HTTPDetail(429, "requests", "rate_limit_exceeded", "Rate limit reached.", "req_7f3c"); got != "HTTP 429 requests/rate_limit_exceeded: Rate limit reached. (request req_7f3c)" {
		t.Error(got)
	}
	if got := HTTPDetail(502, "", "", "non-JSON body", ""); got != "HTTP 502: non-JSON body" {
		t.Error(got)
	}
}

func TestRedirectRule(t *testing.T) {
	t.Parallel()
	var otherHit bool
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { otherHit = true }))
	defer other.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/v1/chat", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/found", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/here", http.StatusFound) })
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/here", http.StatusPermanentRedirect)
	})
	mux.HandleFunc("/here", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(b)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c, err := NewClient(model.ProviderConfig{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	send := func(path string) (*Sent, error) {
		return Send(context.Background(), Attempt{Client: c, URL: srv.URL + path, Header: http.Header{}, Body: []byte(`{"x":1}`)})
	}
	_, err = send("/away")
	var me *model.Error
	if !errors.As(err, &me) || me.Key != model.KeyProviderHTTPError || !strings.HasPrefix(me.Detail, "redirect to another origin refused: http://127.0.0.1:") || me.Retryable {
		t.Errorf("cross-origin: %v", err)
	}
	if otherHit {
		t.Error("the other origin received a request")
	}
	if _, err = send("/found"); !errors.As(err, &me) || !strings.Contains(me.Detail, "status 302 would turn the POST into a GET") {
		t.Errorf("302: %v", err)
	}
	s, err := send("/moved")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(s.Body)
	s.Close()
	if string(b) != `{"x":1}` {
		t.Errorf("a 308 lost the body: %q", b)
	}
}

func TestTransportErrors(t *testing.T) {
	t.Parallel()
	c, _ := NewClient(model.ProviderConfig{BaseURL: "http://127.0.0.1:1"})
	_, err := Send(context.Background(), Attempt{Client: c, URL: "http://127.0.0.1:1/v1", Header: http.Header{}})
	var me *model.Error
	if !errors.As(err, &me) || me.Key != model.KeyProviderError || !me.Retryable || !strings.HasPrefix(me.Detail, "connect: ") {
		t.Errorf("refused connection: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Send(ctx, Attempt{Client: c, URL: "http://127.0.0.1:1/v1", Header: http.Header{}}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hang.Close()
	_, err = Send(context.Background(), Attempt{Client: c, URL: hang.URL, Header: http.Header{}, Idle: 50 * time.Millisecond})
	if !errors.As(err, &me) || !me.Retryable || !strings.Contains(me.Detail, "idle_timeout") {
		t.Errorf("idle: %v", err)
	}
}

func TestInsecureKey(t *testing.T) {
	t.Parallel()
	k := model.NewSecret("K", "v")
	if !InsecureKey(model.ProviderConfig{BaseURL: "http://gpu.example:8000/v1", APIKey: k}) {
		t.Error("plain http to another host")
	}
	if InsecureKey(model.ProviderConfig{BaseURL: "http://127.0.0.1:8000/v1", APIKey: k}) || InsecureKey(model.ProviderConfig{BaseURL: "https://x.example", APIKey: k}) {
		t.Error("loopback or https")
	}
}
