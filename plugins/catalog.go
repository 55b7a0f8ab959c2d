package plugins

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/nexuskernel/nexus/sdk/plugin"
)

// Defaults and bounds of a catalog entry (docs/plugins.md#the-plugin-block).
const (
	// DefaultMaxConcurrency is the calls in flight per plugin: enough to overlap a store's
	// latency, few enough that one plugin cannot hog the host.
	DefaultMaxConcurrency = 8
	// MaxMaxConcurrency bounds max_concurrency; past it a plugin should be several plugins.
	MaxMaxConcurrency = 256
	// DefaultHealthInterval is how often a ready plugin is pinged.
	DefaultHealthInterval = 5 * time.Second
	// DefaultStartTimeout bounds the handshake: a plugin that has not answered in thirty
	// seconds is stuck, not slow.
	DefaultStartTimeout = 30 * time.Second
)

// nameRE is the catalog-name grammar: it keys the executor identity and a directory name.
var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// sha256RE is a hex SHA-256 digest.
var sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Entry is one plugin block.
type Entry struct {
	// Name is the block label, the catalog name.
	Name    string
	Kind    plugin.Kind
	Command string
	Args    []string
	// SHA256 is the pinned digest of the executable, lowercase hex; "" pins nothing.
	SHA256 string
	Env    map[string]string
	// Config is the config block as a JSON object ({} when absent).
	Config json.RawMessage
	// Workspaces lists the workspaces the executor may serve; empty means all.
	Workspaces []string
	// Timeout is the park budget announced for the six memory tools (memory kind only).
	Timeout        time.Duration
	MaxConcurrency int
	HealthInterval time.Duration
	StartTimeout   time.Duration
	Enabled        bool
	// ConfigDir is the directory of the configuration file, against which a relative command
	// containing "/" is resolved.
	ConfigDir string
}

// withDefaults fills the zero values an entry built in code may leave, as the HCL decoder does.
func (e Entry) withDefaults() Entry {
	if e.MaxConcurrency < 1 {
		e.MaxConcurrency = DefaultMaxConcurrency
	}
	if e.HealthInterval <= 0 {
		e.HealthInterval = DefaultHealthInterval
	}
	if e.StartTimeout <= 0 {
		e.StartTimeout = DefaultStartTimeout
	}
	if len(e.Config) == 0 {
		e.Config = json.RawMessage(`{}`)
	}
	return e
}

// Catalog is every plugin block of one configuration, in file order.
type Catalog struct {
	Entries []Entry
}

// Lookup answers the entry with the name.
func (c *Catalog) Lookup(name string) (Entry, bool) {
	if c == nil {
		return Entry{}, false
	}
	for _, e := range c.Entries {
		if e.Name == name {
			return e, true
		}
	}
	return Entry{}, false
}

// pluginBlock is the HCL schema of one plugin block.
type pluginBlock struct {
	Name           string            `hcl:"name,label"`
	Kind           string            `hcl:"kind"`
	Command        string            `hcl:"command"`
	Args           []string          `hcl:"args,optional"`
	SHA256         *string           `hcl:"sha256,optional"`
	Env            map[string]string `hcl:"env,optional"`
	Config         *cty.Value        `hcl:"config,optional"`
	Workspaces     []string          `hcl:"workspaces,optional"`
	TimeoutMS      *int64            `hcl:"timeout_ms,optional"`
	MaxConcurrency *int              `hcl:"max_concurrency,optional"`
	HealthInterval *string           `hcl:"health_interval,optional"`
	StartTimeout   *string           `hcl:"start_timeout,optional"`
	Enabled        *bool             `hcl:"enabled,optional"`
	DefRange       hcl.Range         `hcl:",def_range"`
}

type catalogFile struct {
	Plugins []pluginBlock `hcl:"plugin,block"`
	Remain  hcl.Body      `hcl:",remain"`
}

// EvalContext is the evaluation context of the configuration: one function, env("NAME"), so
// secrets stay out of the file. An unset variable reads as "".
func EvalContext() *hcl.EvalContext {
	return &hcl.EvalContext{Functions: map[string]function.Function{
		"env": function.New(&function.Spec{
			Params: []function.Parameter{{Name: "name", Type: cty.String}},
			Type:   function.StaticReturnType(cty.String),
			Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
				return cty.StringVal(os.Getenv(args[0].AsString())), nil
			},
		}),
	}}
}

// DecodeCatalog reads the plugin blocks of a configuration body and answers the catalog and the
// rest of the body for other readers, as the models catalog does. configDir is the directory of
// the configuration file. Every problem is a diagnostic with the file and line.
func DecodeCatalog(body hcl.Body, configDir string) (*Catalog, hcl.Body, hcl.Diagnostics) {
	var f catalogFile
	diags := gohcl.DecodeBody(body, EvalContext(), &f)
	if diags.HasErrors() {
		return nil, f.Remain, diags
	}
	cat := &Catalog{}
	seen := map[string]hcl.Range{}
	for _, b := range f.Plugins {
		e, d := b.entry(configDir)
		diags = append(diags, d...)
		if prev, dup := seen[b.Name]; dup {
			diags = append(diags, invalid(b.DefRange, "plugin %q is declared twice (first at %s)", b.Name, prev))
		}
		seen[b.Name] = b.DefRange
		cat.Entries = append(cat.Entries, e)
	}
	if diags.HasErrors() {
		return nil, f.Remain, diags
	}
	return cat, f.Remain, diags
}

func invalid(r hcl.Range, format string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid plugin block", Detail: fmt.Sprintf(format, args...) + ".", Subject: r.Ptr()}
}

func (b pluginBlock) entry(configDir string) (Entry, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	bad := func(format string, args ...any) { diags = append(diags, invalid(b.DefRange, format, args...)) }
	e := Entry{
		Name: b.Name, Kind: plugin.Kind(b.Kind), Command: b.Command, Args: b.Args, Env: b.Env,
		Workspaces: b.Workspaces, MaxConcurrency: DefaultMaxConcurrency, HealthInterval: DefaultHealthInterval,
		StartTimeout: DefaultStartTimeout, Enabled: true, ConfigDir: configDir, Config: json.RawMessage(`{}`),
	}
	if !nameRE.MatchString(b.Name) {
		bad("plugin name %q must match [a-z0-9][a-z0-9-]{0,62}", b.Name)
	}
	if !e.Kind.Valid() {
		bad("plugin %q: kind %q is not memory or tool_provider", b.Name, b.Kind)
	}
	if b.Command == "" {
		bad("plugin %q: command is empty", b.Name)
	}
	if b.SHA256 != nil {
		if !sha256RE.MatchString(*b.SHA256) {
			bad("plugin %q: sha256 must be 64 lowercase hex characters", b.Name)
		}
		e.SHA256 = *b.SHA256
	}
	if b.Config != nil && !b.Config.IsNull() {
		t := b.Config.Type()
		if !t.IsObjectType() && !t.IsMapType() {
			bad("plugin %q: config must be an object", b.Name)
		} else if raw, err := ctyjson.Marshal(*b.Config, t); err != nil {
			bad("plugin %q: config cannot be converted to JSON: %v", b.Name, err)
		} else {
			e.Config = raw
		}
	}
	if b.TimeoutMS != nil {
		switch {
		case e.Kind != plugin.KindMemory:
			bad("plugin %q: timeout_ms applies to the memory kind only", b.Name)
		case *b.TimeoutMS < 1 || *b.TimeoutMS > 7*24*3600*1000:
			bad("plugin %q: timeout_ms must be between 1 and 604800000", b.Name)
		default:
			e.Timeout = time.Duration(*b.TimeoutMS) * time.Millisecond
		}
	}
	if b.MaxConcurrency != nil {
		if *b.MaxConcurrency < 1 || *b.MaxConcurrency > MaxMaxConcurrency {
			bad("plugin %q: max_concurrency must be between 1 and %d", b.Name, MaxMaxConcurrency)
		}
		e.MaxConcurrency = *b.MaxConcurrency
	}
	for _, d := range []struct {
		name string
		src  *string
		dst  *time.Duration
	}{{"health_interval", b.HealthInterval, &e.HealthInterval}, {"start_timeout", b.StartTimeout, &e.StartTimeout}} {
		if d.src == nil {
			continue
		}
		v, err := time.ParseDuration(*d.src)
		if err != nil || v <= 0 {
			bad("plugin %q: %s %q is not a positive duration", b.Name, d.name, *d.src)
			continue
		}
		*d.dst = v
	}
	if b.Enabled != nil {
		e.Enabled = *b.Enabled
	}
	return e, diags
}

// ConfigError is a configuration that could not be read: the reload route answers it 422
// validation_failed with the file, line and message.
type ConfigError struct {
	File    string
	Line    int
	Message string
}

func (e *ConfigError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Message)
}

// configError turns diagnostics into a ConfigError naming the first error's place.
func configError(file string, diags hcl.Diagnostics) *ConfigError {
	ce := &ConfigError{File: file, Message: diags.Error()}
	for _, d := range diags {
		if d.Severity == hcl.DiagError && d.Subject != nil {
			ce.File, ce.Line = d.Subject.Filename, d.Subject.Start.Line
			ce.Message = d.Summary + ": " + d.Detail
			break
		}
	}
	return ce
}

// ParseCatalogFile reads the plugin blocks of a configuration file, ignoring its other
// settings: what a reload reads. A problem is a *ConfigError.
func ParseCatalogFile(path string) (*Catalog, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, &ConfigError{File: path, Message: err.Error()}
	}
	f, diags := hclparse.NewParser().ParseHCL(src, path)
	if diags.HasErrors() {
		return nil, configError(path, diags)
	}
	cat, _, diags := DecodeCatalog(f.Body, dirOf(path))
	if diags.HasErrors() {
		return nil, configError(path, diags)
	}
	return cat, nil
}
