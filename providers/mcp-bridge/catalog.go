package mcpbridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
	"github.com/nexuskernel/nexus/sdk/refusal"
)

// Announcement bounds (docs/plugins.md#mcp-servers).
const (
	// maxWithheldListed bounds the environment's withheld list; the environment itself is
	// bounded at 64 KiB.
	maxWithheldListed = 100
	// maxAnnouncementBytes is the announcement door's body bound, less room for the
	// environment, which is measured after the tools are chosen.
	maxAnnouncementBytes = announce.MaxBodyBytes - announce.MaxEnvironmentBytes
	// cacheFormat is the list cache's format number; another is ignored.
	cacheFormat = 1
)

// Reasons a listed tool is withheld from the announcement.
const (
	withheldKernelName = "kernel_name"
	withheldCollision  = "collision"
	withheldDuplicate  = "duplicate_in_list"
	withheldBound      = "announcement_bound"
	withheldRefused    = "refused"
	// withheldSchema lists a tool announced without its input schema (not an object schema of
	// at most 64 KiB): it is served, but no model can be offered it as a function.
	withheldSchema = "input_schema_dropped"
)

// serverList is one server's last tool list, from a listing or from the cache.
type serverList struct {
	Tools           []*mcp.Tool
	ProtocolVersion string
	ServerInfo      *mcp.Implementation
	ListedAt        time.Time
}

// route is where a served name leads.
type route struct {
	server string
	tool   *mcp.Tool
}

type withheld struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	Reason string `json:"reason"`
	Code   string `json:"code,omitempty"`
}

// built is one assembled announcement with the names it serves.
type built struct {
	announcement announce.Announcement
	canonical    []byte
	routes       map[string]route
	withheld     []withheld
}

// hashName is servedName; tests replace it to force a hash collision.
var hashName = servedName

// assemble builds the announcement from every enabled server's current list, in configuration
// order (docs/plugins.md#mcp-servers): allow and deny, names and profiles, kernel names and
// collisions withheld, sorted by served name, bounded, and validated as the host will.
func assemble(cfg Config, lists map[string]*serverList, warn func(msg string, args ...any)) built {
	type candidate struct {
		served string
		route  route
		ov     ToolOverride
		cfg    *ServerConfig
	}
	var cands []candidate
	var out built
	byName := map[string][]int{}
	for si := range cfg.Servers {
		s := &cfg.Servers[si]
		l := lists[s.Name]
		if !s.Enabled || l == nil {
			continue
		}
		seen := map[string]bool{}
		for _, t := range l.Tools {
			if t == nil {
				continue
			}
			if seen[t.Name] {
				out.withheld = append(out.withheld, withheld{Server: s.Name, Tool: t.Name, Reason: withheldDuplicate})
				continue
			}
			seen[t.Name] = true
			if !allowed(s, t.Name) {
				continue
			}
			ov := s.Tools[t.Name]
			served := ov.Name
			if served == "" {
				served = hashName(s.Prefix, t.Name, cfg.MaxNameChars)
			}
			if isKernelName(served) {
				out.withheld = append(out.withheld, withheld{Server: s.Name, Tool: t.Name, Reason: withheldKernelName})
				continue
			}
			byName[served] = append(byName[served], len(cands))
			cands = append(cands, candidate{served: served, route: route{server: s.Name, tool: t}, ov: ov, cfg: s})
		}
	}
	var keep []candidate
	for _, c := range cands {
		if idx := byName[c.served]; len(idx) > 1 {
			out.withheld = append(out.withheld, withheld{Server: c.route.server, Tool: c.route.tool.Name, Reason: withheldCollision})
			if warn != nil {
				warn("withheld: two tools would be served as one name", "name", c.served, "server", c.route.server, "tool", c.route.tool.Name, "reason", withheldCollision)
			}
			continue
		}
		keep = append(keep, c)
	}
	sort.Slice(keep, func(i, j int) bool { return keep[i].served < keep[j].served })

	// The announcement's bounds are shared among the servers (fairShares): a server listing more
	// than its share has its own excess withheld, never another server's tools.
	entries := make([]announce.Tool, len(keep))
	sizes := make([]int, len(keep))
	dropped := make([]bool, len(keep))
	countDemand, byteDemand := map[string]int{}, map[string]int{}
	for i, c := range keep {
		entries[i], dropped[i] = toolEntry(c.served, c.route.tool, c.ov, c.cfg, warn)
		enc, _ := json.Marshal(entries[i])
		sizes[i] = len(enc) + 1
		countDemand[c.route.server]++
		byteDemand[c.route.server] += sizes[i]
	}
	countShare, byteShare := fairShares(countDemand, announce.MaxTools), fairShares(byteDemand, maxAnnouncementBytes)
	countUsed, byteUsed := map[string]int{}, map[string]int{}
	tools := make([]announce.Tool, 0, len(keep))
	routes := make([]route, 0, len(keep))
	for i, c := range keep {
		srv := c.route.server
		if countUsed[srv] >= countShare[srv] || byteUsed[srv]+sizes[i] > byteShare[srv] {
			out.withheld = append(out.withheld, withheld{Server: srv, Tool: c.route.tool.Name, Reason: withheldBound})
			continue
		}
		countUsed[srv]++
		byteUsed[srv] += sizes[i]
		tools = append(tools, entries[i])
		routes = append(routes, c.route)
		if dropped[i] {
			out.withheld = append(out.withheld, withheld{Server: srv, Tool: c.route.tool.Name, Reason: withheldSchema})
		}
	}
	for {
		a := announce.Announcement{Tools: tools, Environment: environment(cfg, lists, tools, routes, out.withheld)}
		r := announce.ValidatePlugin(announce.PluginKindToolProvider, a)
		if r == nil {
			out.announcement = a
			break
		}
		i, path, ok := refusedTool(r, len(tools))
		if !ok {
			// A refusal outside the tool list is a bridge bug; announce no tools rather
			// than an announcement the host refuses whole.
			if warn != nil {
				warn("announcement refused; announcing no tools", "code", r.Code, "path", path)
			}
			for _, rt := range routes {
				out.withheld = append(out.withheld, withheld{Server: rt.server, Tool: rt.tool.Name, Reason: withheldRefused, Code: r.Code})
			}
			tools, routes = nil, nil
			continue
		}
		if warn != nil {
			warn("withheld: the announcement check refused a tool", "name", tools[i].Name, "code", r.Code, "path", path)
		}
		out.withheld = append(out.withheld, withheld{Server: routes[i].server, Tool: routes[i].tool.Name, Reason: withheldRefused, Code: r.Code})
		tools = append(tools[:i:i], tools[i+1:]...)
		routes = append(routes[:i:i], routes[i+1:]...)
	}
	out.routes = map[string]route{}
	for i, t := range out.announcement.Tools {
		out.routes[t.Name] = routes[i]
	}
	enc, _ := json.Marshal(out.announcement.Normalize())
	out.canonical, _, _ = jsonwire.Canonical(enc)
	return out
}

// fairShares divides capacity among demands (a server's tools, or their bytes) by max-min
// fairness: a server asking for no more than an equal part of what is left gets all it asks, and
// what it leaves is shared among the others the same way, the largest demand last. Ties go in
// name order, so the shares are the same on every assembly.
func fairShares(demand map[string]int, capacity int) map[string]int {
	names := make([]string, 0, len(demand))
	for n := range demand {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if demand[names[i]] != demand[names[j]] {
			return demand[names[i]] < demand[names[j]]
		}
		return names[i] < names[j]
	})
	share := make(map[string]int, len(names))
	left := capacity
	for i, n := range names {
		give := min(demand[n], left/(len(names)-i))
		share[n] = give
		left -= give
	}
	return share
}

var toolPathRE = regexp.MustCompile(`^tools\[(\d+)\]`)

// refusedTool is the index of the tool a refusal's first failure names, and that failure's path.
func refusedTool(r *refusal.Refusal, n int) (int, string, bool) {
	if len(r.Errors) == 0 {
		return 0, "", false
	}
	path := r.Errors[0].Path
	m := toolPathRE.FindStringSubmatch(path)
	if m == nil {
		return 0, path, false
	}
	i, err := strconv.Atoi(m[1])
	if err != nil || i >= n {
		return 0, path, false
	}
	return i, path, true
}

// allowed applies allow and deny: deny wins.
func allowed(s *ServerConfig, name string) bool {
	for _, p := range s.Deny {
		if matchPattern(p, name) {
			return false
		}
	}
	if s.Allow == nil {
		return true
	}
	for _, p := range s.Allow {
		if matchPattern(p, name) {
			return true
		}
	}
	return false
}

// matchPattern matches the whole name with the project's one glob (announce.Glob): "*" any run
// of characters, "?" one character, everything else itself.
func matchPattern(pattern, name string) bool { return announce.Glob(pattern, name) }

// toolEntry is one announced tool, and whether its listed input schema was dropped.
func toolEntry(served string, t *mcp.Tool, ov ToolOverride, s *ServerConfig, warn func(string, ...any)) (announce.Tool, bool) {
	prof := effectOf(t.Annotations, s.IgnoreAnnotations)
	if ov.Effect != nil {
		prof = *ov.Effect
	}
	timeout := s.TimeoutMS
	if ov.TimeoutMS > 0 {
		timeout = ov.TimeoutMS
	}
	entry := announce.Tool{Name: served, EffectProfile: announce.Announced(prof), TimeoutMS: &timeout}
	desc := ov.Description
	if desc == "" {
		desc = t.Description
	}
	if desc == "" {
		desc = t.Title
	}
	if desc == "" && t.Annotations != nil {
		desc = t.Annotations.Title
	}
	if desc = cutUTF8(cleanDescription(desc), announce.MaxDescriptionBytes); desc != "" {
		entry.Description = &desc
	}
	schema, ok := inputSchema(t.InputSchema)
	if ok {
		entry.InputSchema = schema
	} else if t.InputSchema != nil && warn != nil {
		warn("tool announced without its input schema: not an object schema of at most 64 KiB", "server", s.Name, "tool", t.Name)
	}
	return entry, !ok && t.InputSchema != nil
}

// cleanDescription removes from a description what a server should not put before a model or
// a person: control characters other than line ends and tabs, and bidirectional controls, which
// can make text display as other text (docs/api.md, "Names that cannot spoof"); bytes that are
// not UTF-8 go too.
func cleanDescription(s string) string {
	return strings.Map(func(r rune) rune {
		if (unicode.IsControl(r) && r != '\n' && r != '\t') || jsonwire.IsBidiControl(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
}

// inputSchema re-encodes a listed schema canonically when it is an object schema whose type is
// "object" and at most 64 KiB.
func inputSchema(v any) (json.RawMessage, bool) {
	if v == nil {
		return nil, false
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	canon, _, err := jsonwire.Canonical(raw)
	if err != nil || len(canon) > announce.MaxInputSchemaBytes {
		return nil, false
	}
	var probe struct {
		Type json.RawMessage `json:"type"`
	}
	if len(canon) == 0 || canon[0] != '{' || json.Unmarshal(canon, &probe) != nil || !bytes.Equal(probe.Type, []byte(`"object"`)) {
		return nil, false
	}
	return canon, true
}

// cutUTF8 cuts s to at most n bytes on a UTF-8 boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// environment is the announcement's facts: the enabled servers in configuration order and the
// tools withheld for a reason other than allow and deny. No live state, so a flapping server
// does not churn the announcement.
func environment(cfg Config, lists map[string]*serverList, tools []announce.Tool, routes []route, held []withheld) json.RawMessage {
	count := map[string]int{}
	for _, r := range routes {
		count[r.server]++
	}
	type serverFact struct {
		Name            string              `json:"name"`
		Transport       string              `json:"transport"`
		ProtocolVersion string              `json:"protocol_version,omitempty"`
		ServerInfo      *mcp.Implementation `json:"server_info,omitempty"`
		Tools           *int                `json:"tools,omitempty"`
	}
	facts := []serverFact{}
	for _, s := range cfg.Servers {
		if !s.Enabled {
			continue
		}
		f := serverFact{Name: s.Name, Transport: s.Transport()}
		if l := lists[s.Name]; l != nil {
			n := count[s.Name]
			f.ProtocolVersion, f.Tools = l.ProtocolVersion, &n
			if l.ServerInfo != nil {
				f.ServerInfo = &mcp.Implementation{Name: l.ServerInfo.Name, Version: l.ServerInfo.Version}
			}
		}
		facts = append(facts, f)
	}
	env := struct {
		Servers      any        `json:"servers"`
		Withheld     []withheld `json:"withheld,omitempty"`
		WithheldMore int        `json:"withheld_more,omitempty"`
	}{Servers: facts}
	if len(held) > maxWithheldListed {
		env.Withheld, env.WithheldMore = held[:maxWithheldListed], len(held)-maxWithheldListed
	} else {
		env.Withheld = held
	}
	raw, _ := json.Marshal(map[string]any{"mcp_bridge": env})
	return raw
}

// cacheFile is the list cache's shape on disk: tool definitions only, never env or headers.
type cacheFile struct {
	Format          int                 `json:"format"`
	ConfigSHA256    string              `json:"config_sha256"`
	ListedAt        string              `json:"listed_at"`
	ProtocolVersion string              `json:"protocol_version"`
	ServerInfo      *mcp.Implementation `json:"server_info,omitempty"`
	Tools           []*mcp.Tool         `json:"tools"`
}

func cachePath(dataDir, server string) string {
	return filepath.Join(dataDir, "cache", server+".json")
}

// writeCache stores a listing atomically: a temporary file, fsync, rename; 0600.
func writeCache(dataDir string, s ServerConfig, l *serverList) error {
	if dataDir == "" {
		return nil
	}
	dir := filepath.Join(dataDir, "cache")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	body, err := json.Marshal(cacheFile{
		Format:          cacheFormat,
		ConfigSHA256:    s.digest,
		ListedAt:        l.ListedAt.UTC().Format(jsonwire.TimeLayout),
		ProtocolVersion: l.ProtocolVersion,
		ServerInfo:      l.ServerInfo,
		Tools:           l.Tools,
	})
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+s.Name+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(body); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, cachePath(dataDir, s.Name))
}

// errCacheStale says a cache belongs to another configuration or format.
var errCacheStale = errors.New("list cache is for another configuration")

// readCache loads a server's cached list; a missing, unreadable or stale cache is an error
// and the server contributes nothing until it lists.
func readCache(dataDir string, s ServerConfig) (*serverList, error) {
	if dataDir == "" {
		return nil, os.ErrNotExist
	}
	body, err := os.ReadFile(cachePath(dataDir, s.Name))
	if err != nil {
		return nil, err
	}
	var c cacheFile
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, fmt.Errorf("list cache: %w", err)
	}
	if c.Format != cacheFormat || c.ConfigSHA256 != s.digest {
		return nil, errCacheStale
	}
	at, _ := time.Parse(time.RFC3339Nano, c.ListedAt)
	return &serverList{Tools: c.Tools, ProtocolVersion: c.ProtocolVersion, ServerInfo: c.ServerInfo, ListedAt: at}, nil
}

// namesOf lists the served names of an announcement, for logs of what changed.
func namesOf(a announce.Announcement) map[string]bool {
	m := map[string]bool{}
	for _, t := range a.Tools {
		m[t.Name] = true
	}
	return m
}

// diffNames is what was added and removed between two announcements.
func diffNames(before, after announce.Announcement) (added, removed []string) {
	b, a := namesOf(before), namesOf(after)
	for n := range a {
		if !b[n] {
			added = append(added, n)
		}
	}
	for n := range b {
		if !a[n] {
			removed = append(removed, n)
		}
	}
	sort.Strings(added)
	sort.Strings(removed)
	return added, removed
}

// joinNames renders a name list for a log line.
func joinNames(ns []string) string { return strings.Join(ns, ",") }
