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

// rule says which module packages one package may depend on, transitively (a package's own
// subpackages are always allowed). pkg is a package path, or a tree "x/..." that covers x and
// every package under it; a package takes the exact rule when there is one, else the longest
// tree. Every package of the module must have a rule: a new package without one fails
// TestEveryPackageHasARule until its place in the direction below is stated here.
type rule struct {
	pkg   string
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

// except allows every module package but the denied trees.
func except(denied ...string) func(string) bool {
	deny := anyOf(denied...)
	return func(dep string) bool { return !deny(dep) }
}

// The SDK's chain, roots first: jsonwire and refusal ← announce ← plugin (and the internal shims) ← memory ←
// toolprovider; the client and the runner beside it on announce.
var (
	sdkJSON     = []string{"sdk/jsonwire"}
	sdkRefusal  = []string{"sdk/refusal"}
	sdkRoots    = append(append([]string(nil), sdkJSON...), sdkRefusal...)
	sdkAnnounce = append([]string{"sdk/announce"}, sdkRoots...)
	sdkPlugin   = append([]string{"sdk/plugin", "sdk/internal"}, sdkAnnounce...)
	sdkMemory   = append([]string{"sdk/memory"}, sdkPlugin...)
	sdkToolProv = append([]string{"sdk/toolprovider"}, sdkMemory...)
	coreLeaves  = append([]string{"core/refusal"}, sdkRoots...)
	coreStore   = append([]string{"core/store", "internal/memo"}, sdkJSON...)
	runsBelow   = append(append(append([]string{"core/approval", "core/declare", "core/envelope", "core/events", "core/identity", "core/liveness", "core/memory", "core/model",
		"core/profiles", "core/projection", "core/registry", "core/steps", "core/uploads"}, coreLeaves...), coreStore...), sdkMemory...)
	binariesAndUp = []string{"cmd", "internal/cli", "internal/testserver", "internal/e2e", "internal/readmetest", "internal/archtest"}
)

// contractPacks embeds the shipped adaptation packs, which the client applies.
var contractPacks = []string{"contracts/nexus/v1/packs"}

func plus(base []string, more ...string) []string {
	return append(append([]string(nil), base...), more...)
}

var rules = []rule{
	// The SDK: a plugin author needs sdk alone.
	{"sdk/jsonwire", anyOf(), "the JSON toolkit is the root of the SDK: it imports nothing from the module"},
	{"sdk/refusal", anyOf(), "the one refusal type is a root of the SDK: it imports nothing from the module"},
	{"sdk/announce", anyOf(sdkRoots...), "announce builds on the JSON toolkit and the refusal type alone"},
	{"sdk/plugin", anyOf(sdkAnnounce...), "sdk/plugin builds on announce alone"},
	{"sdk/internal/...", anyOf(sdkPlugin...), "the gRPC shims and generated code sit under the kinds, on plugin and announce"},
	{"sdk/memory", anyOf(sdkMemory...), "sdk/memory builds on announce and plugin"},
	{"sdk/memory/memorytest", anyOf(sdkMemory...), "the memory conformance kit builds on sdk/memory"},
	{"sdk/toolprovider", anyOf(sdkToolProv...), "toolprovider is the top of the SDK chain"},
	{"sdk/toolprovider/toolprovidertest", anyOf(sdkToolProv...), "the tool-provider kit builds on toolprovider"},
	{"sdk/client", anyOf(plus(sdkAnnounce, contractPacks...)...), "the Go client of the agent API needs announce's types and the shipped adaptation packs only"},
	{"sdk/runner", anyOf(plus(plus(sdkAnnounce, contractPacks...), "sdk/client")...), "the runner is a client of the executor plane"},
	{"contracts/...", anyOf(), "the contracts are data: a package that embeds them imports nothing of the module"},
	// Plugins and the binaries they ship.
	{"providers/memory-fs", anyOf(sdkMemory...), "providers build against the SDK only"},
	{"providers/memory-postgres", anyOf(sdkMemory...), "providers build against the SDK only"},
	{"providers/tools-example", anyOf(sdkToolProv...), "providers build against the SDK only"},
	{"providers/mcp-bridge", anyOf(sdkToolProv...), "the MCP bridge is a tool provider on the SDK (and the MCP Go SDK)"},
	{"providers/mcp-bridge/mcpbridgetest", anyOf(plus(sdkToolProv, "providers/mcp-bridge")...), "the bridge's test servers build on the bridge and the SDK"},
	{"plugins", anyOf(sdkToolProv...), "the plugin host drives the executor plane through an interface it declares"},
	{"cmd/nexus", except("cmd", "internal/testserver", "internal/e2e", "internal/readmetest", "internal/archtest"), "the server binary wires the CLI"},
	{"cmd/nexus-memory-fs", anyOf(plus(sdkMemory, "providers/memory-fs")...), "a plugin binary wires its provider and the SDK"},
	{"cmd/nexus-memory-postgres", anyOf(plus(sdkMemory, "providers/memory-postgres")...), "a plugin binary wires its provider and the SDK"},
	{"cmd/nexus-tools-example", anyOf(plus(sdkToolProv, "providers/tools-example")...), "a plugin binary wires its provider and the SDK"},
	{"cmd/nexus-mcp-bridge", anyOf(plus(sdkToolProv, "providers/mcp-bridge")...), "a plugin binary wires its provider and the SDK"},
	// The edges of core.
	{"core/refusal", anyOf(sdkRefusal...), "refusals are a leaf every service may use, on the SDK's one refusal type"},
	{"core/registry", anyOf(sdkAnnounce...), "the registry imports no other core package"},
	{"core/declare", anyOf(plus(sdkAnnounce, "core/registry", "core/refusal")...), "the compiler needs only the registry (and the JSON toolkit)"},
	{"core/declare/declaretest", anyOf(plus(sdkAnnounce, "core/declare", "core/registry", "core/refusal")...), "the compiler's fixtures build on the compiler"},
	{"core/projection", anyOf(plus(sdkAnnounce, "core/declare", "core/registry", "core/refusal")...), "projection is pure over declare and registry"},
	{"core/envelope", anyOf(coreLeaves...), "the result envelope stands alone on the JSON toolkit"},
	{"core/approval", anyOf(sdkAnnounce...), "the approval rule grammar is a leaf the run door and the profile share; its tool patterns match with sdk/announce's one glob"},
	{"core/model/...", anyOf(plus(coreLeaves, "core/model")...), "the model layer and its adapters import no other core package"},
	{"core/store", anyOf(plus(sdkJSON, "internal/memo")...), "the store holds no business rule: it builds on nothing of the module but the bounded memo and the SDK's root (the id and time forms)"},
	{"core/store/storetest", anyOf(coreStore...), "the store's test kit builds on the store"},
	{"internal/memo", anyOf(), "the bounded memo is a leaf"},
	// The middle, bottom up.
	{"core/events", anyOf(sdkAnnounce...), "the event feed is a leaf: typed events fanned out to this process's subscribers, named with the executor plane's words"},
	{"core/identity", anyOf(plus(coreLeaves, coreStore...)...), "identity reads the store and refuses; it knows no run"},
	{"core/liveness", anyOf(coreStore...), "an instance's heartbeat is a row of the store; what the others do with a dead instance's claims is the engine's"},
	{"core/memory", anyOf(plus(plus(coreLeaves, coreStore...), sdkMemory...)...), "kernel memory is a memory.Provider over the store; it knows no run"},
	{"core/uploads", anyOf(plus(plus(coreLeaves, coreStore...), "core/envelope", "core/identity", "core/model")...), "uploads sit on the store, the envelope and identity, and render for a model's limits what a request attaches; they know no run"},
	{"core/profiles", anyOf(plus(plus(plus(coreLeaves, coreStore...), sdkAnnounce...), "core/approval", "core/declare", "core/registry", "core/model")...), "agent profiles compile declarations and store them; they know no run"},
	{"core/profiles/profilestest", anyOf(plus(plus(plus(coreLeaves, coreStore...), sdkAnnounce...), "core/approval", "core/declare", "core/registry", "core/model", "core/profiles")...), "the profiles' fixtures build on profiles"},
	{"core/steps", anyOf(plus(plus(plus(coreLeaves, coreStore...), sdkAnnounce...), "core/approval", "core/declare", "core/registry", "core/model")...), "the run and step grammar judges shapes: it reads no row, and asks the engine (through Lookups) what the store, the catalog and the compiler know"},
	{"core/runs", anyOf(runsBelow...), "runs defines the interfaces kernel, conversations and executors fill; it imports none of them"},
	{"core/conversations", anyOf(plus(runsBelow, "core/runs")...), "conversations are built on runs' transaction API"},
	{"core/runs/runstest", anyOf(plus(runsBelow, "core/runs", "core/conversations", "core/kernel")...), "the engine's test kit builds the engine, the kernel's tools and the doors above it, for the tests of both"},
	{"core/kernel", anyOf(plus(runsBelow, "core/runs", "core/conversations")...), "kernel tools run on runs (and conversations); the executor plane and HTTP are above them"},
	{"core/executors", anyOf(plus(plus(runsBelow, sdkToolProv...), "core/runs", "plugins")...), "the executor plane is built on runs and fills the plugin host's interface"},
	{"core/httpapi", except(plus(binariesAndUp, "core/server")...), "the doors sit on the services; only wiring and binaries are above them"},
	{"core/server", except(binariesAndUp...), "the server wires every service; only the CLI and the binaries are above it"},
	// The CLI and the test-only trees.
	{"internal/cli", except("cmd", "internal/testserver", "internal/e2e", "internal/readmetest", "internal/archtest"), "the CLI wires the server and the client; only binaries and tests are above it"},
	{"internal/testserver", except("cmd", "internal/e2e", "internal/readmetest", "internal/archtest"), "the test server starts the real server for the tests above it"},
	{"internal/e2e", anyOf(), "a test-only package: its package code imports nothing of the module"},
	{"internal/readmetest", anyOf(), "a test-only package: its package code imports nothing of the module"},
	{"internal/archtest", anyOf(), "a test-only package: its package code imports nothing of the module"},
}

// ruleFor is the package's rule: the exact one, else the longest tree that covers it.
func ruleFor(path string) (rule, bool) {
	var best rule
	found := false
	for _, r := range rules {
		if r.pkg == path {
			return r, true
		}
		if tree, ok := strings.CutSuffix(r.pkg, "/..."); ok && under(path, tree) && (!found || len(tree) > len(strings.TrimSuffix(best.pkg, "/..."))) {
			best, found = r, true
		}
	}
	return best, found
}

func TestEveryPackageHasARule(t *testing.T) {
	t.Parallel()
	for path := range listPackages(t) {
		if _, ok := ruleFor(path); !ok {
			t.Errorf("%s has no dependency rule: state what it may import in rules (internal/archtest/deps_test.go)", path)
		}
	}
}

func TestRuleForPicksTheMostSpecific(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]string{
		"core/model":           "core/model/...",
		"core/model/openai":    "core/model/...",
		"core/store":           "core/store",
		"core/store/storetest": "core/store/storetest",
		"sdk/internal/wire":    "sdk/internal/...",
	} {
		if r, ok := ruleFor(path); !ok || r.pkg != want {
			t.Errorf("%s takes rule %q, want %q", path, r.pkg, want)
		}
	}
	if _, ok := ruleFor("core/newpackage"); ok {
		t.Error("a package nobody stated has a rule")
	}
}

func TestDependencyDirection(t *testing.T) {
	t.Parallel()
	pkgs := listPackages(t)
	for path, p := range pkgs {
		r, ok := ruleFor(path)
		if !ok {
			continue // TestEveryPackageHasARule reports it
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
