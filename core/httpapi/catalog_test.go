package httpapi

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime"
	"os"
	"path/filepath"
	"testing"

	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// TestCatalogRoute checks the catalog route (docs/api.md#health-and-the-catalog) on every dialect.
func TestCatalogRoute(t *testing.T) {
	t.Parallel()
	want := registry.New().CatalogBody()
	sum := sha256.Sum256(want)
	etag := `"` + hex.EncodeToString(sum[:]) + `"`
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		for name, tok := range map[string]string{"user": f.admin, "agent": f.agent} {
			resp := f.do(t, "GET", "/agent_api/v1/tools", tok, nil, nil)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 {
				t.Fatalf("%s: status %d %s", name, resp.StatusCode, body)
			}
			if !bytes.Equal(body, want) {
				t.Fatalf("%s: body differs from the registry's catalog", name)
			}
			mt, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
			if err != nil || mt != "application/json" || params["charset"] != "utf-8" {
				t.Errorf("%s: Content-Type = %q", name, resp.Header.Get("Content-Type"))
			}
			if got := resp.Header.Get("ETag"); got != etag {
				t.Errorf("%s: ETag = %s, want %s", name, got, etag)
			}
			if got := resp.Header.Get("Cache-Control"); got != "no-cache" {
				t.Errorf("%s: Cache-Control = %q", name, got)
			}
			for _, inm := range []string{etag, "W/" + etag, "*", `"other", ` + etag} {
				resp := f.do(t, "GET", "/agent_api/v1/tools", tok, nil, map[string]string{"If-None-Match": inm})
				body, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != 304 || len(body) != 0 || resp.Header.Get("ETag") != etag {
					t.Errorf("%s If-None-Match %s: status %d, %d body bytes, ETag %q", name, inm, resp.StatusCode, len(body), resp.Header.Get("ETag"))
				}
			}
			resp = f.do(t, "GET", "/agent_api/v1/tools", tok, nil, map[string]string{"If-None-Match": `"other"`})
			if resp.StatusCode != 200 {
				t.Errorf("%s: a stale ETag got %d", name, resp.StatusCode)
			}
			resp = f.do(t, "GET", "/agent_api/v1/tools?unknown=1", tok, nil, nil)
			if resp.StatusCode != 200 {
				t.Errorf("%s: an unknown query parameter got %d", name, resp.StatusCode)
			}
		}
		// The conditional request is answered only after authentication.
		wantError(t, f.do(t, "GET", "/agent_api/v1/tools", "", nil, map[string]string{"If-None-Match": etag}), 401, "unauthorized")
	})
}

func TestCatalogGzip(t *testing.T) {
	t.Parallel()
	f := newFixture(t, storetest.Open(t, store.SQLite))
	want := registry.New().CatalogBody()
	for _, ae := range []string{"gzip", "br, gzip;q=0.5", "*", "x-gzip"} {
		resp := f.do(t, "GET", "/agent_api/v1/tools", f.admin, nil, map[string]string{"Accept-Encoding": ae})
		if resp.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("Accept-Encoding %q: not gzipped", ae)
		}
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(zr)
		if !bytes.Equal(got, want) {
			t.Fatalf("Accept-Encoding %q: gunzipped body differs", ae)
		}
		if resp.Header.Get("Vary") != "Accept-Encoding" {
			t.Errorf("Vary = %q", resp.Header.Get("Vary"))
		}
	}
	for _, ae := range []string{"", "gzip;q=0", "br", "*;q=0", "identity"} {
		resp := f.do(t, "GET", "/agent_api/v1/tools", f.admin, nil, map[string]string{"Accept-Encoding": ae})
		body, _ := io.ReadAll(resp.Body)
		if resp.Header.Get("Content-Encoding") != "" || !bytes.Equal(body, want) {
			t.Fatalf("Accept-Encoding %q: got an encoded body", ae)
		}
	}
}

// TestContractPackMatchesRoute is the HTTP half of docs/agent-tools.md#the-twenty-kernel-tools: the
// compacted contract file equals the envelope around the served delegate_task entry's raw bytes.
func TestContractPackMatchesRoute(t *testing.T) {
	t.Parallel()
	f := newFixture(t, storetest.Open(t, store.SQLite))
	resp := f.do(t, "GET", "/agent_api/v1/tools", f.admin, nil, nil)
	body, _ := io.ReadAll(resp.Body)
	var served struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(body, &served); err != nil {
		t.Fatal(err)
	}
	var entry json.RawMessage
	for _, raw := range served.Tools {
		var head struct {
			Canonical string `json:"canonical_name"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			t.Fatal(err)
		}
		if head.Canonical == "nexus.graph.delegate_task" {
			entry = raw
		}
	}
	if entry == nil {
		t.Fatal("the route serves no nexus.graph.delegate_task entry")
	}
	path := filepath.Join("..", "..", "contracts", "nexus", "v1", "tools.json")
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, file); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	want := append(append([]byte(`{"tools":[`), entry...), ']', '}')
	if !bytes.Equal(compact.Bytes(), want) {
		t.Fatalf("%s differs from the served delegate_task entry; run `make contracts`", path)
	}
}
