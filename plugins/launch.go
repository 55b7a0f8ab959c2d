package plugins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/plugin"
	"github.com/nexuskernel/nexus/sdk/refusal"
	"github.com/nexuskernel/nexus/sdk/toolprovider"
)

// MaxMessageBytes bounds one gRPC message each way: captures up to 8 MiB plus a 1 MB result,
// with headroom (docs/development.md#the-plugin-host).
const MaxMessageBytes = 16 << 20

// inheritedEnv are the host variables a plugin receives; nothing else of the host's
// environment reaches it, so secrets such as NEXUS_BOOTSTRAP_TOKEN never do.
var inheritedEnv = []string{"PATH", "HOME", "TMPDIR", "TZ", "LANG"}

// instance is one running plugin process and its dispensed client.
type instance struct {
	client    *goplugin.Client
	describer plugin.Describer
	memory    memory.Client       // set for the memory kind
	tools     toolprovider.Client // set for the tool_provider kind
	info      plugin.Info
	announce  announce.Announcement
	// revision is the announcement revision the plugin reported with announce (protocol 1.1;
	// 0 when it keeps none). Guarded by the supervisor's mu once the instance serves.
	revision   uint64
	pid        int
	generation int
	startedAt  time.Time
	stderr     *lineRing
}

// kill ends the process (go-plugin waits 2 s for a graceful exit), then its process group.
func (in *instance) kill() {
	in.client.Kill()
	killGroup(in.pid)
}

// launchSpec is what one start needs.
type launchSpec struct {
	entry   Entry
	command string
	digest  string
	dataDir string
	logger  hclog.Logger
}

// pluginSet is the host's versioned plugin set: protocol major 1 serves both kinds.
func pluginSet() map[int]goplugin.PluginSet {
	return map[int]goplugin.PluginSet{
		plugin.ProtocolMajor: {
			plugin.KindMemory.PluginSetKey():       memory.ClientPlugin(),
			plugin.KindToolProvider.PluginSetKey(): toolprovider.ClientPlugin(),
		},
	}
}

// infoWriter logs each line a plugin writes to stdout after the handshake, at info.
type infoWriter struct{ logger hclog.Logger }

func (w infoWriter) Write(p []byte) (int, error) {
	for line := range strings.SplitSeq(strings.TrimRight(string(p), "\n"), "\n") {
		w.logger.Info("plugin stdout", "line", line)
	}
	return len(p), nil
}

// launch starts the process and runs the load sequence up to the validated announcement
// (docs/plugins.md#what-the-host-checks). On any failure the process is killed and a *refusal.Refusal
// answered.
func launch(ctx context.Context, spec launchSpec, generation int) (*instance, *refusal.Refusal) {
	e := spec.entry
	cmd := exec.Command(spec.command, e.Args...)
	cmd.Dir = spec.dataDir
	cmd.SysProcAttr = procAttr()
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	for _, k := range sortedKeys(e.Env) {
		cmd.Env = append(cmd.Env, k+"="+e.Env[k])
	}
	cmd.Env = append(cmd.Env, "NEXUS_PLUGIN_NAME="+e.Name)

	var secure *goplugin.SecureConfig
	if e.SHA256 != "" {
		sum, _ := hex.DecodeString(e.SHA256)
		secure = &goplugin.SecureConfig{Checksum: sum, Hash: sha256.New()}
	}
	ring := &lineRing{}
	logger := spec.logger.Named("plugin." + e.Name)
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  plugin.Handshake,
		VersionedPlugins: pluginSet(),
		Cmd:              cmd,
		SecureConfig:     secure,
		AutoMTLS:         true,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		SkipHostEnv:      true,
		StartTimeout:     e.StartTimeout,
		Logger:           logger,
		Stderr:           ring,
		SyncStdout:       infoWriter{logger},
		SyncStderr:       io.Discard,
		GRPCDialOptions:  dialOptions(),
	})
	fail := func(r *refusal.Refusal) (*instance, *refusal.Refusal) {
		client.Kill()
		if cmd.Process != nil {
			killGroup(cmd.Process.Pid)
		}
		return nil, r
	}
	rpc, err := client.Client()
	if err != nil {
		return fail(startRefusal(err, e.SHA256, spec.digest, ring))
	}
	raw, err := rpc.Dispense(e.Kind.PluginSetKey())
	if err != nil {
		return fail(startFailure(CodeHandshakeFailed, "dispense: "+err.Error()))
	}
	in := &instance{client: client, generation: generation, startedAt: time.Now(), stderr: ring}
	if cmd.Process != nil {
		in.pid = cmd.Process.Pid
	}
	switch c := raw.(type) {
	case memory.Client:
		in.memory, in.describer = c, c
	case toolprovider.Client:
		in.tools, in.describer = c, c
	default:
		return fail(loadRefusal(CodeKindMismatch, "dispensed %T", raw))
	}

	startCtx, cancel := context.WithTimeout(ctx, e.StartTimeout)
	defer cancel()
	info, _, err := in.describer.Describe(startCtx)
	if err != nil {
		return fail(startFailure(CodeHandshakeFailed, "describe: "+err.Error()))
	}
	if info.Kind != e.Kind {
		return fail(loadRefusal(CodeKindMismatch, "the catalog says %s; the plugin serves %q", e.Kind, info.Kind))
	}
	if !slices.Contains(info.ProtocolVersions, plugin.ProtocolMajor) {
		return fail(loadRefusal(CodeProtocolUnsupported, "the plugin serves protocol majors %v; the host speaks %d", info.ProtocolVersions, plugin.ProtocolMajor))
	}
	in.info = info
	dataDir := spec.dataDir
	if err := in.describer.Configure(startCtx, plugin.Config{PluginName: e.Name, DataDir: dataDir, Raw: e.Config, MaxConcurrency: e.MaxConcurrency}); err != nil {
		if errors.Is(err, plugin.ErrConfigInvalid) {
			return fail(loadRefusal(CodeConfigRefused, "%s", err.Error()))
		}
		return fail(startFailure(CodeStartFailed, "configure: "+err.Error()))
	}
	var a announce.Announcement
	if in.tools != nil {
		_, a, in.revision, err = in.tools.DescribeRevision(startCtx)
	} else {
		_, a, err = in.describer.Describe(startCtx)
	}
	if err != nil {
		return fail(startFailure(CodeStartFailed, "describe: "+err.Error()))
	}
	if r := announce.ValidatePlugin(string(e.Kind), a); r != nil {
		return fail(r)
	}
	if e.Kind == plugin.KindMemory {
		// The host states the family's effects itself: a memory plugin cannot misstate them.
		timeout := e.Timeout
		if timeout == 0 {
			timeout = memory.DefaultTimeout
		}
		env := a.Environment
		a = memory.KernelAnnouncement(timeout)
		a.Environment = env
	}
	in.announce = a.Normalize()
	return in, nil
}

// startRefusal classifies a failed start: a checksum mismatch and a protocol without a common
// major are deterministic; everything else (wrong cookie, stdout noise, timeout, early exit) is
// a handshake failure the supervisor retries.
func startRefusal(err error, pinned, digest string, ring *lineRing) *refusal.Refusal {
	switch {
	case errors.Is(err, goplugin.ErrChecksumsDoNotMatch):
		return loadRefusal(CodeChecksumMismatch, "the catalog pins sha256 %s; the file's is %s", pinned, digest)
	case strings.Contains(err.Error(), "incompatible API version"):
		return loadRefusal(CodeProtocolUnsupported, "%s", err.Error())
	}
	msg := err.Error()
	if tail := ring.Lines(); len(tail) > 0 {
		msg += "; stderr: " + tail[len(tail)-1]
	}
	return startFailure(CodeHandshakeFailed, msg)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// pluginDataDir is <data-dir>/plugins/<catalog name>, created 0700.
func pluginDataDir(dataDir, name string) (string, error) {
	dir := filepath.Join(dataDir, "plugins", name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir, nil
	}
	return abs, nil
}
