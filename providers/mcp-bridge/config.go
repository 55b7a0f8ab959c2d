package mcpbridge

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// Configuration bounds (docs/plugins.md#mcp-servers).
const (
	// MaxServers bounds the servers of one bridge: one process supervising more is better
	// split into two plugins.
	MaxServers = 32
	// MaxServerNameChars leaves room for tool names under the 64-character budget.
	MaxServerNameChars = 32
	// MaxPrefixChars bounds a prefix; it must also leave 12 characters of max_name_chars for
	// the hashed form (11 characters plus one of head).
	MaxPrefixChars = 40
	// hashedReserve is what the hashed form needs after the prefix.
	hashedReserve = 12
	// DefaultMaxNameChars keeps every name usable with model providers whose function names
	// stop at 64 characters; the announcement grammar itself allows 128.
	DefaultMaxNameChars = 64
	minMaxNameChars     = 16
	// MaxPatterns bounds allow and deny lists each.
	MaxPatterns = 256
	// MaxOverrides per server: the announcement bound.
	MaxOverrides = 512
	// DefaultTimeoutMS is the park budget announced for a server's tools.
	DefaultTimeoutMS = 120000
	// DefaultMaxTextBytes and MaxTextBytesLimit bound a result's text: two budgets plus links
	// stay under the 1 MiB commit bound.
	DefaultMaxTextBytes = 262144
	minMaxTextBytes     = 4096
	MaxTextBytesLimit   = 491520
	// DefaultMaxStructuredBytes bounds structured_content for the same reason.
	DefaultMaxStructuredBytes = 262144
	// DefaultConnectTimeout is how long New waits for a server's first tool list.
	DefaultConnectTimeout = 10 * time.Second
	minConnectTimeout     = time.Second
	maxConnectTimeout     = 5 * time.Minute
	// minSupervisionDuration keeps a typo ("1ms") from turning backoff into a busy loop.
	minSupervisionDuration = 100 * time.Millisecond
	// maxListedRefusals is how many configuration failures a refusal message lists.
	maxListedRefusals = 8
	// MaxServerConcurrency bounds a server's max_concurrency: the host's own bound on a
	// plugin's (plugins.MaxMaxConcurrency), which no server's share can exceed.
	MaxServerConcurrency = 256
	// hostDefaultConcurrency is the host's default max_concurrency, assumed when the host does
	// not say its own (plugin.Config.MaxConcurrency 0).
	hostDefaultConcurrency = 8
)

var (
	serverNameRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	prefixRE     = regexp.MustCompile(`^[A-Za-z0-9_-]*$`)
	envKeyRE     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	httpTokenRE  = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	servedNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
)

// transportHeaders belong to the streamable HTTP transport and may not be configured.
var transportHeaders = []string{"Accept", "Content-Type", "Content-Length", "Host", "Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-Id"}

// Config is a decoded, checked bridge configuration.
type Config struct {
	Servers      []ServerConfig
	MaxNameChars int
	Supervision  Supervision
}

// Supervision is how server restarts back off and when the breaker opens.
type Supervision struct {
	BackoffInitial  time.Duration
	BackoffMax      time.Duration
	BreakerFailures int
	BreakerWindow   time.Duration
	BreakerCooldown time.Duration
	PingInterval    time.Duration
}

// ServerConfig is one MCP server's entry.
type ServerConfig struct {
	Name         string
	Enabled      bool
	Command      string
	Args         []string
	Env          map[string]string
	Cwd          string // "" means <data dir>/work/<name>
	URL          string
	InsecureHTTP bool
	Headers      map[string]string
	Prefix       string
	Allow        []string
	Deny         []string
	// IgnoreAnnotations is annotations = "ignore".
	IgnoreAnnotations bool
	TimeoutMS         int64
	// ReadLinks is resource_links = "read".
	ReadLinks          bool
	MaxTextBytes       int
	MaxStructuredBytes int
	ConnectTimeout     time.Duration
	// MaxConcurrency is how many of the server's calls run at once (max_concurrency): by
	// default max(1, the plugin's max_concurrency / the enabled servers), so that a server
	// that hangs holds its share and no more.
	MaxConcurrency int
	Tools          map[string]ToolOverride
	// digest is the SHA-256 of the entry's canonical JSON, secrets included: it keys the
	// list cache, so a changed credential also invalidates it.
	digest string
}

// Transport is "stdio" or "http".
func (s ServerConfig) Transport() string {
	if s.URL != "" {
		return "http"
	}
	return "stdio"
}

// ToolOverride replaces parts of one tool's mapping.
type ToolOverride struct {
	Name        string
	Effect      *announce.EffectProfile
	TimeoutMS   int64
	Description string
}

type rawConfig struct {
	Servers      []json.RawMessage `json:"servers"`
	MaxNameChars *int              `json:"max_name_chars"`
	Supervision  *rawSupervision   `json:"supervision"`
}

type rawSupervision struct {
	BackoffInitial  *string `json:"backoff_initial"`
	BackoffMax      *string `json:"backoff_max"`
	BreakerFailures *int    `json:"breaker_failures"`
	BreakerWindow   *string `json:"breaker_window"`
	BreakerCooldown *string `json:"breaker_cooldown"`
	PingInterval    *string `json:"ping_interval"`
}

type rawServer struct {
	Name               *string                `json:"name"`
	Enabled            *bool                  `json:"enabled"`
	Command            *string                `json:"command"`
	Args               []string               `json:"args"`
	Env                map[string]string      `json:"env"`
	Cwd                *string                `json:"cwd"`
	URL                *string                `json:"url"`
	InsecureHTTP       *bool                  `json:"insecure_http"`
	Headers            map[string]string      `json:"headers"`
	Prefix             *string                `json:"prefix"`
	Allow              []string               `json:"allow"`
	Deny               []string               `json:"deny"`
	Annotations        *string                `json:"annotations"`
	TimeoutMS          *int64                 `json:"timeout_ms"`
	ResourceLinks      *string                `json:"resource_links"`
	MaxTextBytes       *int                   `json:"max_text_bytes"`
	MaxStructuredBytes *int                   `json:"max_structured_bytes"`
	ConnectTimeout     *string                `json:"connect_timeout"`
	MaxConcurrency     *int                   `json:"max_concurrency"`
	Tools              map[string]rawOverride `json:"tools"`
}

type rawOverride struct {
	Name        *string         `json:"name"`
	Effect      json.RawMessage `json:"effect"`
	TimeoutMS   *int64          `json:"timeout_ms"`
	Description *string         `json:"description"`
}

// problems collects configuration failures in the order found.
type problems []string

func (p *problems) add(path, format string, args ...any) {
	*p = append(*p, path+": "+fmt.Sprintf(format, args...))
}

func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	shown := p
	more := ""
	if len(shown) > maxListedRefusals {
		shown = shown[:maxListedRefusals]
		more = fmt.Sprintf("\n(%d more)", len(p)-maxListedRefusals)
	}
	return fmt.Errorf("%w: %s%s", plugin.ErrConfigInvalid, strings.Join(shown, "\n"), more)
}

// ParseConfig decodes and checks the plugin's config block. A failure wraps
// plugin.ErrConfigInvalid and names each offending JSON path; it never echoes a value of env
// or headers.
func ParseConfig(cfg plugin.Config) (Config, error) {
	var raw rawConfig
	if err := cfg.Decode(&raw); err != nil {
		return Config{}, err
	}
	var ps problems
	out := Config{MaxNameChars: DefaultMaxNameChars}
	if raw.MaxNameChars != nil {
		if *raw.MaxNameChars < minMaxNameChars || *raw.MaxNameChars > announce.MaxToolNameLength {
			ps.add("max_name_chars", "must be %d..%d", minMaxNameChars, announce.MaxToolNameLength)
		} else {
			out.MaxNameChars = *raw.MaxNameChars
		}
	}
	out.Supervision = parseSupervision(&ps, raw.Supervision)
	switch {
	case raw.Servers == nil:
		ps.add("servers", "is required")
	case len(raw.Servers) == 0 || len(raw.Servers) > MaxServers:
		ps.add("servers", "must list 1..%d servers", MaxServers)
	}
	names := map[string]int{}
	for i, rs := range raw.Servers {
		s, ok := parseServer(&ps, i, rs, out.MaxNameChars)
		if !ok {
			continue
		}
		if j, dup := names[s.Name]; dup {
			ps.add(fmt.Sprintf("servers[%d].name", i), "%q is also the name of servers[%d]; server names must be unique", s.Name, j)
		} else {
			names[s.Name] = i
		}
		out.Servers = append(out.Servers, s)
	}
	if len(ps) == 0 {
		checkAcrossServers(&ps, out)
	}
	if err := ps.err(); err != nil {
		return Config{}, err
	}
	share := defaultServerConcurrency(cfg.MaxConcurrency, out.Servers)
	for i := range out.Servers {
		if out.Servers[i].MaxConcurrency == 0 {
			out.Servers[i].MaxConcurrency = share
		}
	}
	return out, nil
}

// defaultServerConcurrency is a server's max_concurrency when its entry does not set one: the
// plugin's max_concurrency divided among the enabled servers, at least 1.
func defaultServerConcurrency(hostMax int, servers []ServerConfig) int {
	if hostMax <= 0 {
		hostMax = hostDefaultConcurrency
	}
	enabled := 0
	for _, s := range servers {
		if s.Enabled {
			enabled++
		}
	}
	return max(1, hostMax/max(1, enabled))
}

func parseSupervision(ps *problems, raw *rawSupervision) Supervision {
	s := Supervision{
		BackoffInitial:  time.Second,
		BackoffMax:      60 * time.Second,
		BreakerFailures: 5,
		BreakerWindow:   10 * time.Minute,
		BreakerCooldown: 10 * time.Minute,
		PingInterval:    30 * time.Second,
	}
	if raw == nil {
		return s
	}
	dur := func(key string, v *string, into *time.Duration) {
		if v == nil {
			return
		}
		d, err := time.ParseDuration(*v)
		if err != nil {
			ps.add("supervision."+key, "%q is not a duration such as \"1s\"", *v)
			return
		}
		if d < minSupervisionDuration {
			ps.add("supervision."+key, "must be at least 100ms")
			return
		}
		*into = d
	}
	dur("backoff_initial", raw.BackoffInitial, &s.BackoffInitial)
	dur("backoff_max", raw.BackoffMax, &s.BackoffMax)
	dur("breaker_window", raw.BreakerWindow, &s.BreakerWindow)
	dur("breaker_cooldown", raw.BreakerCooldown, &s.BreakerCooldown)
	dur("ping_interval", raw.PingInterval, &s.PingInterval)
	if raw.BreakerFailures != nil {
		if *raw.BreakerFailures < 1 {
			ps.add("supervision.breaker_failures", "must be at least 1")
		} else {
			s.BreakerFailures = *raw.BreakerFailures
		}
	}
	if s.BackoffMax < s.BackoffInitial {
		s.BackoffMax = s.BackoffInitial
	}
	return s
}

func strictDecode(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
}

func parseServer(ps *problems, i int, raw json.RawMessage, maxName int) (ServerConfig, bool) {
	at := func(key string) string {
		if key == "" {
			return fmt.Sprintf("servers[%d]", i)
		}
		return fmt.Sprintf("servers[%d].%s", i, key)
	}
	var r rawServer
	if err := strictDecode(raw, &r); err != nil {
		ps.add(at(""), "%s", decodeErrorText(err))
		return ServerConfig{}, false
	}
	before := len(*ps)
	s := ServerConfig{
		Enabled:            true,
		TimeoutMS:          DefaultTimeoutMS,
		ReadLinks:          true,
		MaxTextBytes:       DefaultMaxTextBytes,
		MaxStructuredBytes: DefaultMaxStructuredBytes,
		ConnectTimeout:     DefaultConnectTimeout,
		Args:               r.Args,
		Env:                r.Env,
		Headers:            r.Headers,
		Allow:              r.Allow,
		Deny:               r.Deny,
	}
	switch {
	case r.Name == nil:
		ps.add(at("name"), "is required")
	case !serverNameRE.MatchString(*r.Name) || len(*r.Name) > MaxServerNameChars:
		ps.add(at("name"), "%q must be lowercase letters and digits in hyphen-separated words, at most %d characters", *r.Name, MaxServerNameChars)
	default:
		s.Name = *r.Name
	}
	if r.Enabled != nil {
		s.Enabled = *r.Enabled
	}
	switch {
	case r.Command != nil && r.URL != nil:
		ps.add(at(""), "has both command and url; a server has exactly one")
	case r.Command == nil && r.URL == nil:
		ps.add(at(""), "needs command (stdio) or url (streamable HTTP)")
	case r.Command != nil:
		checkStdio(ps, at, r, &s)
	default:
		checkHTTP(ps, at, r, &s)
	}
	if r.Prefix != nil {
		p := *r.Prefix
		switch {
		case !prefixRE.MatchString(p) || len(p) > MaxPrefixChars:
			ps.add(at("prefix"), "%q must be at most %d characters of [A-Za-z0-9_-]", p, MaxPrefixChars)
		case len(p) > maxName-hashedReserve:
			ps.add(at("prefix"), "%q is longer than max_name_chars - %d (%d)", p, hashedReserve, maxName-hashedReserve)
		}
		s.Prefix = p
	} else if s.Name != "" {
		s.Prefix = s.Name + "_"
		if len(s.Prefix) > maxName-hashedReserve {
			ps.add(at("prefix"), "the default prefix %q is longer than max_name_chars - %d (%d); set a shorter prefix", s.Prefix, hashedReserve, maxName-hashedReserve)
		}
	}
	checkPatterns(ps, at("allow"), r.Allow)
	checkPatterns(ps, at("deny"), r.Deny)
	if r.Annotations != nil {
		switch *r.Annotations {
		case "trust":
		case "ignore":
			s.IgnoreAnnotations = true
		default:
			ps.add(at("annotations"), "%q must be \"trust\" or \"ignore\"", *r.Annotations)
		}
	}
	if r.TimeoutMS != nil {
		if *r.TimeoutMS < announce.MinTimeoutMS || *r.TimeoutMS > announce.MaxTimeoutMS {
			ps.add(at("timeout_ms"), "must be %d..%d", announce.MinTimeoutMS, announce.MaxTimeoutMS)
		}
		s.TimeoutMS = *r.TimeoutMS
	}
	if r.ResourceLinks != nil {
		switch *r.ResourceLinks {
		case "read":
		case "text":
			s.ReadLinks = false
		default:
			ps.add(at("resource_links"), "%q must be \"read\" or \"text\"", *r.ResourceLinks)
		}
	}
	if r.MaxTextBytes != nil {
		if *r.MaxTextBytes < minMaxTextBytes || *r.MaxTextBytes > MaxTextBytesLimit {
			ps.add(at("max_text_bytes"), "must be %d..%d", minMaxTextBytes, MaxTextBytesLimit)
		}
		s.MaxTextBytes = *r.MaxTextBytes
	}
	if r.MaxStructuredBytes != nil {
		if *r.MaxStructuredBytes < 0 || *r.MaxStructuredBytes > MaxTextBytesLimit {
			ps.add(at("max_structured_bytes"), "must be 0..%d", MaxTextBytesLimit)
		}
		s.MaxStructuredBytes = *r.MaxStructuredBytes
	}
	if r.ConnectTimeout != nil {
		d, err := time.ParseDuration(*r.ConnectTimeout)
		switch {
		case err != nil:
			ps.add(at("connect_timeout"), "%q is not a duration such as \"10s\"", *r.ConnectTimeout)
		case d < minConnectTimeout || d > maxConnectTimeout:
			ps.add(at("connect_timeout"), "must be 1s..5m")
		default:
			s.ConnectTimeout = d
		}
	}
	if r.MaxConcurrency != nil {
		if *r.MaxConcurrency < 1 || *r.MaxConcurrency > MaxServerConcurrency {
			ps.add(at("max_concurrency"), "must be 1..%d", MaxServerConcurrency)
		}
		s.MaxConcurrency = *r.MaxConcurrency
	}
	s.Tools = parseOverrides(ps, at, r.Tools, maxName)
	if len(*ps) > before {
		return s, false
	}
	canon, _, err := jsonwire.Canonical(raw)
	if err != nil {
		ps.add(at(""), "is not canonical JSON")
		return s, false
	}
	sum := sha256.Sum256(canon)
	s.digest = hex.EncodeToString(sum[:])
	return s, true
}

// decodeErrorText is encoding/json's message without its Go type names; it never holds a
// value, only keys and JSON kinds.
func decodeErrorText(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Sprintf("%s: a JSON %s is not allowed here", te.Field, te.Value)
		}
		return fmt.Sprintf("a JSON %s is not allowed here", te.Value)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func checkStdio(ps *problems, at func(string) string, r rawServer, s *ServerConfig) {
	cmd := *r.Command
	switch {
	case cmd == "":
		ps.add(at("command"), "must not be empty")
	case !filepath.IsAbs(cmd) && strings.Contains(cmd, "/"):
		ps.add(at("command"), "%q is a relative path; give an absolute path or a bare name looked up in PATH", cmd)
	}
	s.Command = cmd
	for _, k := range sortedKeys(r.Env) {
		if !envKeyRE.MatchString(k) {
			ps.add(at("env"), "%q is not a variable name ([A-Za-z_][A-Za-z0-9_]*)", k)
		}
	}
	if r.Cwd != nil {
		if !filepath.IsAbs(*r.Cwd) {
			ps.add(at("cwd"), "%q must be an absolute path", *r.Cwd)
		}
		s.Cwd = *r.Cwd
	}
	for _, k := range []struct {
		key string
		set bool
	}{{"insecure_http", r.InsecureHTTP != nil}, {"headers", r.Headers != nil}} {
		if k.set {
			ps.add(at(k.key), "applies to url servers only")
		}
	}
}

func checkHTTP(ps *problems, at func(string) string, r rawServer, s *ServerConfig) {
	s.InsecureHTTP = r.InsecureHTTP != nil && *r.InsecureHTTP
	s.URL = *r.URL
	u, err := url.Parse(s.URL)
	switch {
	case err != nil || !u.IsAbs() || u.Host == "":
		ps.add(at("url"), "must be an absolute https:// or http:// URL")
	case u.Scheme == "https":
	case u.Scheme == "http":
		if !s.InsecureHTTP && !isLoopbackHost(u.Hostname()) {
			ps.add(at("url"), "http:// is allowed only for loopback hosts (set insecure_http to allow it)")
		}
	default:
		ps.add(at("url"), "scheme %q is not https or http", u.Scheme)
	}
	for _, k := range sortedKeys(r.Headers) {
		if !httpTokenRE.MatchString(k) {
			ps.add(at("headers"), "%q is not a valid header name", k)
			continue
		}
		for _, t := range transportHeaders {
			if strings.EqualFold(k, t) {
				ps.add(at("headers"), "%q is managed by the transport", t)
			}
		}
	}
	for _, k := range []struct {
		key string
		set bool
	}{{"args", r.Args != nil}, {"env", r.Env != nil}, {"cwd", r.Cwd != nil}} {
		if k.set {
			ps.add(at(k.key), "applies to command servers only")
		}
	}
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func checkPatterns(ps *problems, path string, pats []string) {
	if len(pats) > MaxPatterns {
		ps.add(path, "lists %d patterns; at most %d", len(pats), MaxPatterns)
	}
	for i, p := range pats {
		if p == "" {
			ps.add(fmt.Sprintf("%s[%d]", path, i), "an empty pattern matches no tool")
		}
	}
}

func parseOverrides(ps *problems, at func(string) string, raw map[string]rawOverride, maxName int) map[string]ToolOverride {
	if len(raw) > MaxOverrides {
		ps.add(at("tools"), "has %d entries; at most %d", len(raw), MaxOverrides)
	}
	out := map[string]ToolOverride{}
	for _, name := range sortedKeys(raw) {
		r := raw[name]
		path := at(fmt.Sprintf("tools[%q]", name))
		var o ToolOverride
		if r.Name != nil {
			n := *r.Name
			switch {
			case !servedNameRE.MatchString(n) || len(n) > maxName:
				ps.add(path+".name", "%q must be 1..%d characters of [A-Za-z0-9_-]", n, maxName)
			case isKernelName(n):
				ps.add(path+".name", "%q is a kernel tool name", n)
			}
			o.Name = n
		}
		if len(r.Effect) > 0 {
			p, err := announce.ParseEffectProfile(r.Effect)
			if err != nil {
				var pe *announce.ProfileError
				key := ""
				if errors.As(err, &pe) && pe.Key != "" {
					key = "." + pe.Key
				}
				ps.add(path+".effect"+key, "%s", strings.TrimPrefix(err.Error(), "effect profile: "))
			} else {
				o.Effect = &p
			}
		}
		if r.TimeoutMS != nil {
			if *r.TimeoutMS < announce.MinTimeoutMS || *r.TimeoutMS > announce.MaxTimeoutMS {
				ps.add(path+".timeout_ms", "must be %d..%d", announce.MinTimeoutMS, announce.MaxTimeoutMS)
			}
			o.TimeoutMS = *r.TimeoutMS
		}
		if r.Description != nil {
			d := *r.Description
			if d == "" || len(d) > announce.MaxDescriptionBytes || !utf8.ValidString(d) {
				ps.add(path+".description", "must be non-empty UTF-8 text of at most %d bytes", announce.MaxDescriptionBytes)
			}
			o.Description = d
		}
		out[name] = o
	}
	return out
}

// checkAcrossServers applies the rules that relate servers: prefix-freedom, the empty prefix,
// and the override names.
func checkAcrossServers(ps *problems, c Config) {
	type entry struct {
		i      int
		prefix string
	}
	var enabled []entry
	for i, s := range c.Servers {
		if s.Enabled {
			enabled = append(enabled, entry{i, s.Prefix})
		}
	}
	for _, e := range enabled {
		if e.prefix == "" && len(enabled) > 1 {
			ps.add(fmt.Sprintf("servers[%d].prefix", e.i), "\"\" is allowed only when exactly one server is enabled")
		}
	}
	for a := range enabled {
		for b := range enabled {
			pa, pb := enabled[a], enabled[b]
			if a == b || pa.prefix == "" || pb.prefix == "" || !strings.HasPrefix(pb.prefix, pa.prefix) {
				continue
			}
			if pa.prefix == pb.prefix && a > b {
				continue
			}
			ps.add(fmt.Sprintf("servers[%d].prefix", pa.i), "%q is a prefix of servers[%d].prefix %q; prefixes must be prefix-free", pa.prefix, pb.i, pb.prefix)
		}
	}
	seen := map[string]string{}
	for i, s := range c.Servers {
		for _, mcpName := range sortedKeys(s.Tools) {
			o := s.Tools[mcpName]
			if o.Name == "" {
				continue
			}
			path := fmt.Sprintf("servers[%d].tools[%q].name", i, mcpName)
			for _, e := range enabled {
				if e.prefix != "" && strings.HasPrefix(o.Name, e.prefix) {
					ps.add(path, "%q starts with servers[%d].prefix %q", o.Name, e.i, e.prefix)
				}
			}
			if prev, dup := seen[o.Name]; dup {
				ps.add(path, "%q is also the name given at %s; override names must be unique", o.Name, prev)
			} else {
				seen[o.Name] = path
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// isKernelName reports whether the kernel knows name, in either spelling and of any class.
func isKernelName(name string) bool {
	_, _, _, ok := announce.Lookup(name)
	return ok
}
