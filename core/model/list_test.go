package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/refusal"
)

// TestModelsListSpecExample checks the page of limit 1 against the built-in catalog
// (docs/api.md#models), byte for byte once compacted.
func TestModelsListSpecExample(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/models_list_limit_1.json")
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := json.Compact(&want, raw); err != nil {
		t.Fatal(err)
	}
	res, err := MustBuiltin().ModelsList(json.RawMessage(`{"limit": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != want.String() {
		t.Errorf("content\n got %s\nwant %s", res.Content, want.String())
	}
	if string(res.StructuredContent) != want.String() || res.IsError || res.Title != "models" {
		t.Errorf("result %+v", res)
	}
}

func listCatalog(t *testing.T) *Catalog {
	t.Helper()
	mk := func(ref, display string) Model {
		p, n, _ := strings.Cut(ref, "/")
		return Model{Ref: ref, Provider: p, Name: n, DisplayName: display, Capabilities: Capabilities{Tools: true}}
	}
	// The listing's own models only: the built-in mock/text-only stays out.
	noMock := false
	c, err := NewCatalog(&Config{
		BuiltinMockModels: &noMock,
		Providers:         []ProviderConfig{{Name: "mock", Type: "mock"}, {Name: "lab", Type: "mock"}, {Name: "zoo", Type: "mock"}},
		Models: []Model{
			mk("zoo/Tiger", "Striped <cat> & co"), mk("mock/scripted", "Mock (scripted)"), mk("lab/b", "Bee"),
			mk("lab/a", "Ant"), mk("mock/fast", "Mock fast"), mk("lab/c", "Cat Deluxe"),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func refs(p ListPage) []string {
	var out []string
	for _, m := range p.Models {
		out = append(out, m.Ref)
	}
	return out
}

func TestListPagingAndQuery(t *testing.T) {
	t.Parallel()
	c := listCatalog(t)
	ptr := func(i int) *int { return &i }
	cases := []struct {
		name  string
		q     ListQuery
		refs  []string
		total int
		next  *int
	}{
		{"all, sorted by ref", ListQuery{}, []string{"lab/a", "lab/b", "lab/c", "mock/fast", "mock/scripted", "zoo/Tiger"}, 6, nil},
		{"first page", ListQuery{Limit: 2}, []string{"lab/a", "lab/b"}, 6, ptr(2)},
		{"middle page", ListQuery{Limit: 2, Offset: 2}, []string{"lab/c", "mock/fast"}, 6, ptr(4)},
		{"last page", ListQuery{Limit: 2, Offset: 4}, []string{"mock/scripted", "zoo/Tiger"}, 6, nil},
		{"short last page", ListQuery{Limit: 4, Offset: 4}, []string{"mock/scripted", "zoo/Tiger"}, 6, nil},
		{"offset at total", ListQuery{Offset: 6}, nil, 6, nil},
		{"offset past total", ListQuery{Offset: 600}, nil, 6, nil},
		{"query over the provider", ListQuery{Query: "LAB"}, []string{"lab/a", "lab/b", "lab/c"}, 3, nil},
		{"query over the ref", ListQuery{Query: "k/f"}, []string{"mock/fast"}, 1, nil},
		{"query over the display name, ignoring case", ListQuery{Query: "cAT"}, []string{"lab/c", "zoo/Tiger"}, 2, nil},
		{"query over an upper-case ref", ListQuery{Query: "tiger"}, []string{"zoo/Tiger"}, 1, nil},
		{"query with paging", ListQuery{Query: "mock", Limit: 1, Offset: 1}, []string{"mock/scripted"}, 2, nil},
		{"query with paging, first", ListQuery{Query: "mock", Limit: 1}, []string{"mock/fast"}, 2, ptr(1)},
		{"query matching nothing", ListQuery{Query: "gpt"}, nil, 0, nil},
		{"a limit over the maximum is the maximum", ListQuery{Limit: 1000}, []string{"lab/a", "lab/b", "lab/c", "mock/fast", "mock/scripted", "zoo/Tiger"}, 6, nil},
	}
	for _, cs := range cases {
		t.Run(cs.name, func(t *testing.T) {
			t.Parallel()
			p := c.List(cs.q)
			if diff := cmp.Diff(cs.refs, refs(p)); diff != "" {
				t.Errorf("refs (-want +got)\n%s", diff)
			}
			if p.Total != cs.total || !cmp.Equal(p.NextOffset, cs.next) {
				t.Errorf("total %d next %v, want %d %v", p.Total, p.NextOffset, cs.total, cs.next)
			}
			body, err := p.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			var back struct {
				Models     []json.RawMessage `json:"models"`
				NextOffset *int              `json:"next_offset"`
			}
			if err := json.Unmarshal(body, &back); err != nil {
				t.Fatal(err)
			}
			if back.Models == nil || len(back.Models) != len(cs.refs) {
				t.Errorf("models %s, want an array of %d", body, len(cs.refs))
			}
			if cs.next == nil && !bytes.HasSuffix(body, []byte(`"next_offset":null}`)) {
				t.Errorf("next_offset is not null at the end: %s", body)
			}
		})
	}
}

func TestListJSONShape(t *testing.T) {
	t.Parallel()
	c := listCatalog(t)
	p := c.List(ListQuery{Query: "tiger"})
	body, err := p.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"models":[{"ref":"zoo/Tiger","provider":"zoo","model":"Tiger","display_name":"Striped <cat> & co",` +
		`"capabilities":{"tools":true,"vision":false,"pdf":false,"reasoning":false,"context_window":null,"max_output_tokens":null},` +
		`"pricing":null}],"total":1,"offset":0,"next_offset":null}`
	if string(body) != want {
		t.Errorf("\n got %s\nwant %s", body, want)
	}
	empty, err := c.List(ListQuery{Query: "none"}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if string(empty) != `{"models":[],"total":0,"offset":0,"next_offset":null}` {
		t.Errorf("empty page %s", empty)
	}
	// Prices are served as the numbers configured.
	priced, err := NewCatalog(&Config{Providers: []ProviderConfig{{Name: "m", Type: "mock"}}, Models: []Model{{Ref: "m/x", Provider: "m", Name: "x",
		Pricing: &Pricing{InputPerMTok: "0.3", OutputPerMTok: "15", Currency: "EUR"}}}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ = priced.List(ListQuery{}).MarshalJSON()
	if !bytes.Contains(body, []byte(`"pricing":{"input_per_mtok":0.3,"output_per_mtok":15,"currency":"EUR"}`)) {
		t.Errorf("pricing %s", body)
	}
}

func TestModelsListArguments(t *testing.T) {
	t.Parallel()
	c := listCatalog(t)
	ok := []struct {
		in   string
		refs []string
	}{
		{``, []string{"lab/a", "lab/b", "lab/c", "mock/fast", "mock/scripted", "zoo/Tiger"}},
		{`null`, []string{"lab/a", "lab/b", "lab/c", "mock/fast", "mock/scripted", "zoo/Tiger"}},
		{`{}`, []string{"lab/a", "lab/b", "lab/c", "mock/fast", "mock/scripted", "zoo/Tiger"}},
		{`{"query": "", "limit": null, "offset": null}`, []string{"lab/a", "lab/b", "lab/c", "mock/fast", "mock/scripted", "zoo/Tiger"}},
		{`{"query": null}`, []string{"lab/a", "lab/b", "lab/c", "mock/fast", "mock/scripted", "zoo/Tiger"}},
		{`{"query": "lab", "limit": 2.0, "offset": 1}`, []string{"lab/b", "lab/c"}},
		{`{"limit": 1e2}`, []string{"lab/a", "lab/b", "lab/c", "mock/fast", "mock/scripted", "zoo/Tiger"}},
		{`{"limit": 1, "offset": 5}`, []string{"zoo/Tiger"}},
		{`{"offset": 1e15}`, nil},
	}
	for _, o := range ok {
		q, err := ParseListArguments(json.RawMessage(o.in))
		if err != nil {
			t.Errorf("%s: %v", o.in, err)
			continue
		}
		if diff := cmp.Diff(o.refs, refs(c.List(q))); diff != "" {
			t.Errorf("%s (-want +got)\n%s", o.in, diff)
		}
	}

	refused := []struct{ in, sentence string }{
		{`{"q": "x"}`, "q is not a parameter; the parameters are query, limit, offset."},
		{`{"zeta": 1, "alpha": 2, "limit": 0}`, "alpha is not a parameter; the parameters are query, limit, offset."},
		{`{"query": 5}`, "query must be a string."},
		{`{"query": ["a"], "limit": 0}`, "query must be a string."},
		{`{"limit": 0}`, "limit must be an integer from 1 to 100."},
		{`{"limit": 101}`, "limit must be an integer from 1 to 100."},
		{`{"limit": 1.5}`, "limit must be an integer from 1 to 100."},
		{`{"limit": "5"}`, "limit must be an integer from 1 to 100."},
		{`{"limit": true}`, "limit must be an integer from 1 to 100."},
		{`{"limit": -1, "offset": -1}`, "limit must be an integer from 1 to 100."},
		{`{"offset": -1}`, "offset must be an integer of at least 0."},
		{`{"offset": 0.5}`, "offset must be an integer of at least 0."},
		{`{"offset": "0"}`, "offset must be an integer of at least 0."},
		{`{"offset": {}}`, "offset must be an integer of at least 0."},
	}
	for _, r := range refused {
		_, err := ParseListArguments(json.RawMessage(r.in))
		var ae *ArgumentsError
		if !errors.As(err, &ae) || ae.Sentence != r.sentence {
			t.Errorf("%s: got %v, want %q", r.in, err, r.sentence)
			continue
		}
		res, err := c.ModelsList(json.RawMessage(r.in))
		if err != nil {
			t.Fatal(err)
		}
		sc, _ := json.Marshal(r.sentence)
		want := ToolResult{
			Content:           "invalid_arguments: " + r.sentence,
			StructuredContent: json.RawMessage(fmt.Sprintf(`{"error":{"key":"invalid_arguments","detail":%s}}`, sc)),
			IsError:           true,
			Title:             "models_list refused",
		}
		if diff := cmp.Diff(want, res); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", r.in, diff)
		}
	}
	for _, in := range []string{`[]`, `"x"`, `{`} {
		if _, err := c.ModelsList(json.RawMessage(in)); err == nil {
			t.Errorf("%s: input that is not an object answered", in)
		}
	}
}

func TestParseListParams(t *testing.T) {
	t.Parallel()
	q, err := ParseListParams(map[string][]string{"query": {"Mock"}, "limit": {"5"}, "offset": {"2"}, "other": {"x"}})
	if err != nil || q != (ListQuery{Query: "Mock", Limit: 5, Offset: 2}) {
		t.Errorf("got %+v %v", q, err)
	}
	q, err = ParseListParams(map[string][]string{"limit": {""}, "offset": {""}})
	if err != nil || q != (ListQuery{Limit: 20}) {
		t.Errorf("empty values: got %+v %v", q, err)
	}
	q, err = ParseListParams(map[string][]string{"offset": {"99999999999999999999999"}})
	if err != nil || len(listCatalog(t).List(q).Models) != 0 {
		t.Errorf("huge offset: got %+v %v", q, err)
	}
	for _, bad := range []struct{ key, value string }{
		{"limit", "0"}, {"limit", "101"}, {"limit", "x"}, {"limit", "-1"}, {"limit", "1.0"},
		{"offset", "-1"}, {"offset", "a"}, {"offset", "1e3"},
	} {
		_, err := ParseListParams(map[string][]string{bad.key: {bad.value}})
		r, ok := refusal.As(err)
		if !ok || r.Code != "parameter_invalid" || r.Kind != refusal.BadRequest {
			t.Errorf("%s=%s: got %v", bad.key, bad.value, err)
			continue
		}
		if path, _ := r.Get("path"); path != bad.key {
			t.Errorf("%s=%s: path %v", bad.key, bad.value, path)
		}
	}
}
