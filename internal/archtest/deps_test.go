package archtest

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/nexuskernel/nexus"

type pkg struct {
	ImportPath string
	Deps       []string
	Imports    []string
}

// listPackages runs `go list -deps -json` over the whole module once and returns the module's
// own packages, each with its transitive dependencies.
func listPackages(t *testing.T) map[string]pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Deps,Imports", module+"/...")
	cmd.Dir = "../.."
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(&out)
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs[strings.TrimPrefix(p.ImportPath, module+"/")] = p
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no packages")
	}
	return pkgs
}

// own returns the module-relative paths of a package's transitive dependencies inside the module.
func own(p pkg) []string {
	var out []string
	for _, d := range p.Deps {
		if rel, ok := strings.CutPrefix(d, module+"/"); ok {
			out = append(out, rel)
		}
	}
	sort.Strings(out)
	return out
}

func under(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// rule says which module packages a package (matched by prefix) may depend on, transitively.
type rule struct {
	from  string
	allow func(dep string) bool
	why   string
}

func anyOf(prefixes ...string) func(string) bool {
	return func(dep string) bool {
		for _, p := range prefixes {
			if under(dep, p) {
				return true
			}
		}
		return false
	}
}

var rules = []rule{
	{"sdk/announce", anyOf(), "announce imports nothing from the module: it is the root of the SDK"},
	{"sdk/plugin", anyOf("sdk/announce", "sdk/internal"), "sdk/plugin builds on announce alone"},
	{"sdk/memory", anyOf("sdk/announce", "sdk/plugin", "sdk/memory", "sdk/internal"), "sdk/memory builds on announce and plugin; its conformance kit on sdk/memory itself"},
	{"sdk/toolprovider", anyOf("sdk/announce", "sdk/plugin", "sdk/memory", "sdk/toolprovider", "sdk/internal"), "toolprovider is the top of the SDK chain; its kit builds on it"},
	{"sdk", anyOf("sdk"), "a plugin author needs sdk alone"},
	{"providers", anyOf("sdk"), "providers build against the SDK only"},
	{"plugins", anyOf("sdk"), "the plugin host drives the executor plane through an interface it declares"},
	{"core/registry", anyOf("sdk/announce"), "the registry imports no other core package"},
	{"core/refusal", anyOf(), "refusals are a leaf every service may use"},
	{"core/canonjson", anyOf(), "canonical JSON is a leaf every package may use"},
	{"core/model", anyOf("core/model", "core/refusal", "core/canonjson"), "the model layer is a leaf that runs, kernel and httpapi all use"},
	{"core/approval", anyOf("sdk/announce/jsonwire"), "the approval rule grammar is a leaf the run door and the profile share"},
	{"core/envelope", anyOf("core/refusal", "sdk/announce/jsonwire"), "the result envelope stands alone, on the JSON walker it shares with the announcement validator"},
	{"core/declare", anyOf("core/registry", "core/refusal", "sdk/announce"), "the compiler needs only the registry"},
	{"core/projection", anyOf("core/declare", "core/registry", "core/refusal", "sdk/announce"), "projection is pure over declare and registry"},
	{"core/runs", func(dep string) bool {
		return !under(dep, "core/conversations") && !under(dep, "core/kernel") && !under(dep, "core/executors") && !under(dep, "core/httpapi") && !under(dep, "core/server")
	}, "runs is the engine: it defines the interfaces kernel and executors fill, and conversations builds on it"},
	{"core/conversations", func(dep string) bool {
		return !under(dep, "core/kernel") && !under(dep, "core/executors") && !under(dep, "core/httpapi") && !under(dep, "core/server")
	}, "conversations builds on the engine; the kernel's tools call it, never the other way"},
	{"core/store", anyOf("core/store", "internal/memo"), "the store holds no business rule: it builds on nothing of the module but the bounded memo"},
}

func TestDependencyDirection(t *testing.T) {
	t.Parallel()
	pkgs := listPackages(t)
	for path, p := range pkgs {
		for _, r := range rules {
			if !under(path, r.from) {
				continue
			}
			for _, dep := range own(p) {
				if under(dep, path) {
					continue
				}
				if !r.allow(dep) {
					t.Errorf("%s depends on %s: %s", path, dep, r.why)
				}
			}
		}
	}
}

// drivers are the database drivers the module uses.
var drivers = []string{"github.com/lib/pq", "modernc.org/sqlite"}

// TestOnlyStoreImportsADriver keeps the database behind core/store: a service reads a driver's
// error codes through the store's typed errors (store.ErrRetryable, store.IsUniqueViolation),
// never from the driver. A provider under providers/ is a program of its own with a database of
// its own, and is not held to this.
func TestOnlyStoreImportsADriver(t *testing.T) {
	t.Parallel()
	for path, p := range listPackages(t) {
		if under(path, "core/store") || under(path, "providers") {
			continue
		}
		for _, imp := range p.Imports {
			for _, d := range drivers {
				if under(imp, d) {
					t.Errorf("%s imports %s; only core/store imports a database driver", path, imp)
				}
			}
		}
	}
}

// modelClient reports the model provider adapters and what they share: HTTP clients of the model
// providers, which serve no route.
func modelClient(path string) bool {
	return under(path, "core/model/wire") || under(path, "core/model/openai") || under(path, "core/model/anthropic") || under(path, "core/model/modeltest")
}

// TestOnlyHTTPAPIKnowsHTTP keeps net/http out of the services: core/httpapi routes and writes,
// core/server listens, and nothing else in core speaks HTTP.
func TestOnlyHTTPAPIKnowsHTTP(t *testing.T) {
	t.Parallel()
	for path, p := range listPackages(t) {
		if !under(path, "core") || under(path, "core/httpapi") || under(path, "core/server") || modelClient(path) {
			continue
		}
		for _, imp := range p.Imports {
			if imp == "net/http" {
				t.Errorf("%s imports net/http; only core/httpapi knows HTTP", path)
			}
		}
	}
}

// TestCommandsOnlyWire keeps main packages thin: a command imports the CLI or the SDK and
// providers it serves, never the services directly.
func TestCommandsOnlyWire(t *testing.T) {
	t.Parallel()
	for path, p := range listPackages(t) {
		if !under(path, "cmd") {
			continue
		}
		for _, imp := range p.Imports {
			rel, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			if !under(rel, "internal/cli") && !under(rel, "sdk") && !under(rel, "providers") {
				t.Errorf("%s imports %s; commands only wire the CLI, the SDK and providers", path, rel)
			}
		}
	}
}
