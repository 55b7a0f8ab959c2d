package mcpbridge

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/sdk/plugin"
)

func parseRaw(raw string) error {
	_, err := ParseConfig(plugin.Config{Raw: json.RawMessage(raw)})
	return err
}

func TestConfigRefusals(t *testing.T) {
	const ok = `{"name":"ok","command":"/bin/true"}`
	for _, c := range []struct{ name, raw, want string }{
		{"no servers", `{}`, "servers: is required"},
		{"empty servers", `{"servers":[]}`, "servers: must list 1..32 servers"},
		{"unknown key", `{"servers":[` + ok + `],"nope":1}`, `unknown field "nope"`},
		{"max_name_chars", `{"max_name_chars":15,"servers":[` + ok + `]}`, "max_name_chars: must be 16..128"},
		{"supervision duration", `{"supervision":{"backoff_initial":"10ms"},"servers":[` + ok + `]}`, "supervision.backoff_initial: must be at least 100ms"},
		{"supervision word", `{"supervision":{"ping_interval":"soon"},"servers":[` + ok + `]}`, `supervision.ping_interval: "soon" is not a duration`},
		{"breaker_failures", `{"supervision":{"breaker_failures":0},"servers":[` + ok + `]}`, "supervision.breaker_failures: must be at least 1"},
		{"server unknown key", `{"servers":[{"name":"a","command":"x","nope":1}]}`, `servers[0]: unknown field "nope"`},
		{"name required", `{"servers":[{"command":"x"}]}`, "servers[0].name: is required"},
		{"name grammar", `{"servers":[{"name":"Fs","command":"x"}]}`, `servers[0].name: "Fs" must be lowercase`},
		{"name too long", `{"servers":[{"name":"` + strings.Repeat("a", 33) + `","command":"x"}]}`, "at most 32 characters"},
		{"duplicate name", `{"servers":[{"name":"fs","command":"x"},{"name":"fs","command":"y","prefix":"g_"}]}`, `servers[1].name: "fs" is also the name of servers[0]`},
		{"both transports", `{"servers":[{"name":"a","command":"x","url":"https://h/mcp"}]}`, "servers[0]: has both command and url"},
		{"no transport", `{"servers":[{"name":"a"}]}`, "servers[0]: needs command (stdio) or url"},
		{"empty command", `{"servers":[{"name":"a","command":""}]}`, "servers[0].command: must not be empty"},
		{"relative command", `{"servers":[{"name":"a","command":"bin/x"}]}`, `servers[0].command: "bin/x" is a relative path`},
		{"env key", `{"servers":[{"name":"a","command":"x","env":{"1BAD":"v"}}]}`, `servers[0].env: "1BAD" is not a variable name`},
		{"cwd", `{"servers":[{"name":"a","command":"x","cwd":"rel"}]}`, `servers[0].cwd: "rel" must be an absolute path`},
		{"headers on stdio", `{"servers":[{"name":"a","command":"x","headers":{"A":"b"}}]}`, "servers[0].headers: applies to url servers only"},
		{"args on http", `{"servers":[{"name":"a","url":"https://h/mcp","args":["x"]}]}`, "servers[0].args: applies to command servers only"},
		{"url relative", `{"servers":[{"name":"a","url":"/mcp"}]}`, "servers[0].url: must be an absolute"},
		{"url scheme", `{"servers":[{"name":"a","url":"ftp://h/mcp"}]}`, `servers[0].url: scheme "ftp"`},
		{"plain http", `{"servers":[{"name":"a","url":"http://example.com/mcp"}]}`, "servers[0].url: http:// is allowed only for loopback hosts (set insecure_http to allow it)"},
		{"header name", `{"servers":[{"name":"a","url":"https://h/mcp","headers":{"Bad Name":"v"}}]}`, `servers[0].headers: "Bad Name" is not a valid header name`},
		{"transport header", `{"servers":[{"name":"a","url":"https://h/mcp","headers":{"mcp-session-id":"v"}}]}`, `servers[0].headers: "Mcp-Session-Id" is managed by the transport`},
		{"prefix grammar", `{"servers":[{"name":"a","command":"x","prefix":"a.b"}]}`, `servers[0].prefix: "a.b" must be at most 40 characters`},
		{"prefix budget", `{"max_name_chars":20,"servers":[{"name":"a","command":"x","prefix":"abcdefghij"}]}`, "servers[0].prefix: \"abcdefghij\" is longer than max_name_chars - 12 (8)"},
		{"prefix-free", `{"servers":[{"name":"fs","command":"x"},{"name":"fsx","command":"y","prefix":"fs_x_"}]}`, `servers[0].prefix: "fs_" is a prefix of servers[1].prefix "fs_x_"; prefixes must be prefix-free`},
		{"empty prefix with two", `{"servers":[{"name":"a","command":"x","prefix":""},{"name":"b","command":"y"}]}`, `servers[0].prefix: "" is allowed only when exactly one server is enabled`},
		{"empty pattern", `{"servers":[{"name":"a","command":"x","allow":[""]}]}`, "servers[0].allow[0]: an empty pattern matches no tool"},
		{"annotations", `{"servers":[{"name":"a","command":"x","annotations":"maybe"}]}`, `servers[0].annotations: "maybe" must be "trust" or "ignore"`},
		{"timeout_ms", `{"servers":[{"name":"a","command":"x","timeout_ms":0}]}`, "servers[0].timeout_ms: must be 1..604800000"},
		{"resource_links", `{"servers":[{"name":"a","command":"x","resource_links":"fetch"}]}`, `servers[0].resource_links: "fetch" must be "read" or "text"`},
		{"max_text_bytes", `{"servers":[{"name":"a","command":"x","max_text_bytes":100}]}`, "servers[0].max_text_bytes: must be 4096..491520"},
		{"max_structured_bytes", `{"servers":[{"name":"a","command":"x","max_structured_bytes":-1}]}`, "servers[0].max_structured_bytes: must be 0..491520"},
		{"connect_timeout", `{"servers":[{"name":"a","command":"x","connect_timeout":"10m"}]}`, "servers[0].connect_timeout: must be 1s..5m"},
		{"override name grammar", `{"servers":[{"name":"a","command":"x","tools":{"t":{"name":"a.b"}}}]}`, `servers[0].tools["t"].name: "a.b" must be 1..64 characters`},
		{"override kernel name", `{"servers":[{"name":"a","command":"x","tools":{"t":{"name":"memory_read"}}}]}`, `servers[0].tools["t"].name: "memory_read" is a kernel tool name`},
		{"override prefix", `{"servers":[{"name":"a","command":"x","tools":{"t":{"name":"a_t"}}}]}`, `servers[0].tools["t"].name: "a_t" starts with servers[0].prefix "a_"`},
		{"override unique", `{"servers":[{"name":"a","command":"x","tools":{"s":{"name":"n"},"t":{"name":"n"}}}]}`, `servers[0].tools["t"].name: "n" is also the name given at servers[0].tools["s"].name`},
		{"override effect", `{"servers":[{"name":"a","command":"x","tools":{"write_file":{"effect":{"kind":"read_only","destructive":true,"effect_scope":"open","idempotency":"none","reconciliation":"none"}}}}]}`, `servers[0].tools["write_file"].effect.destructive: a read_only tool cannot be destructive`},
		{"override effect incomplete", `{"servers":[{"name":"a","command":"x","tools":{"t":{"effect":{"kind":"write"}}}}]}`, `servers[0].tools["t"].effect.destructive: destructive is required`},
		{"override timeout", `{"servers":[{"name":"a","command":"x","tools":{"t":{"timeout_ms":604800001}}}]}`, `servers[0].tools["t"].timeout_ms: must be 1..604800000`},
		{"override description", `{"servers":[{"name":"a","command":"x","tools":{"t":{"description":""}}}]}`, `servers[0].tools["t"].description: must be non-empty`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := parseRaw(c.raw)
			if !errors.Is(err, plugin.ErrConfigInvalid) {
				t.Fatalf("error %v, want ErrConfigInvalid", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q lacks %q", err, c.want)
			}
		})
	}
}

func TestConfigListsTheFirstEightFailures(t *testing.T) {
	var servers []string
	for i := 0; i < 10; i++ {
		servers = append(servers, `{"name":"BAD","command":"x"}`)
	}
	err := parseRaw(`{"servers":[` + strings.Join(servers, ",") + `]}`)
	if n := strings.Count(err.Error(), "must be lowercase"); n != 8 || !strings.Contains(err.Error(), "(2 more)") {
		t.Errorf("%d failures listed: %v", n, err)
	}
}

func TestConfigNeverEchoesSecrets(t *testing.T) {
	const secret = "s3cr3t-value"
	for _, raw := range []string{
		`{"servers":[{"name":"a","url":"http://example.com/mcp","headers":{"Authorization":"` + secret + `","Mcp-Session-Id":"` + secret + `"}}]}`,
		`{"servers":[{"name":"a","command":"x","env":{"1X":"` + secret + `","GOOD":"` + secret + `"},"headers":{"A":"` + secret + `"}}]}`,
		`{"servers":[{"name":"a","command":"x","env":{"K":5}}]}`,
	} {
		err := parseRaw(raw)
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("error %v echoes a secret or is nil", err)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	c, err := ParseConfig(plugin.Config{Raw: json.RawMessage(`{"servers":[{"name":"fs","command":"node","args":["x"]},{"name":"web","url":"http://127.0.0.1:8080/mcp","enabled":false},{"name":"v6","url":"http://[::1]/mcp"},{"name":"ins","url":"http://example.com/mcp","insecure_http":true}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	s := c.Servers[0]
	if c.MaxNameChars != 64 || s.Prefix != "fs_" || !s.Enabled || s.TimeoutMS != 120000 || !s.ReadLinks || s.MaxTextBytes != 262144 || s.MaxStructuredBytes != 262144 || s.ConnectTimeout.String() != "10s" || s.Transport() != "stdio" {
		t.Errorf("defaults %+v", s)
	}
	if c.Supervision.BackoffInitial.String() != "1s" || c.Supervision.BreakerFailures != 5 || c.Supervision.PingInterval.String() != "30s" {
		t.Errorf("supervision %+v", c.Supervision)
	}
	if c.Servers[1].Enabled || c.Servers[1].Transport() != "http" {
		t.Errorf("disabled %+v", c.Servers[1])
	}
	// A changed secret changes the cache key.
	a, _ := ParseConfig(plugin.Config{Raw: json.RawMessage(`{"servers":[{"name":"a","command":"x","env":{"T":"1"}}]}`)})
	b, _ := ParseConfig(plugin.Config{Raw: json.RawMessage(`{"servers":[{"name":"a","command":"x","env":{"T":"2"}}]}`)})
	if a.Servers[0].digest == b.Servers[0].digest || len(a.Servers[0].digest) != 64 {
		t.Error("the digest does not cover env")
	}
}
