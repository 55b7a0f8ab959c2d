package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goplugin "github.com/hashicorp/go-plugin"

	memoryfs "github.com/nexuskernel/nexus/providers/memory-fs"
	memorypostgres "github.com/nexuskernel/nexus/providers/memory-postgres"
	toolsexample "github.com/nexuskernel/nexus/providers/tools-example"
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/memory/memorytest"
	"github.com/nexuskernel/nexus/sdk/plugin"
	"github.com/nexuskernel/nexus/sdk/toolprovider"
)

// The host's tests re-execute their own test binary as the plugin (go-plugin's helper-process
// pattern): TestMain serves the scenario NEXUS_TEST_PLUGIN names instead of running tests.
const (
	envScenario = "NEXUS_TEST_PLUGIN"
	// envDir is a directory the scenario and the test share: "started-<pid>" files say a call
	// is in progress, and a "block" file holds the slow calls.
	envDir = "NEXUS_TEST_DIR"
)

func TestMain(m *testing.M) {
	if scenario := os.Getenv(envScenario); scenario != "" {
		serveScenario(scenario)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serveScenario never returns normally.
func serveScenario(name string) {
	info := plugin.Info{Name: "test-" + name, Version: "0.0.1"}
	memStore := func(context.Context, plugin.Config) (memory.Provider, error) { return memorytest.NewMemStore(), nil }
	tools := func(m *toolprovider.Mux) func(context.Context, plugin.Config) (toolprovider.Provider, error) {
		return func(context.Context, plugin.Config) (toolprovider.Provider, error) { return m, nil }
	}
	switch name {
	case "memory-inmem":
		memory.Serve(memory.ServeConfig{Info: info, Configure: memStore})
	case "memory-fs":
		memory.Serve(memory.ServeConfig{Info: info, Configure: memoryfs.Configure})
	case "memory-postgres":
		memory.Serve(memory.ServeConfig{Info: info, Configure: memorypostgres.Configure})
	case "memory-slow":
		memory.Serve(memory.ServeConfig{Info: info, Configure: func(context.Context, plugin.Config) (memory.Provider, error) {
			return slowStore{memorytest.NewMemStore()}, nil
		}})
	case "memory-seven-tools":
		memory.Serve(memory.ServeConfig{Info: info, Configure: func(context.Context, plugin.Config) (memory.Provider, error) {
			a := memory.KernelAnnouncement(time.Second)
			a.Tools = append(a.Tools, announce.Tool{Name: "memory_export", EffectProfile: announce.Announced(announce.EffectReadOnly)})
			return announcing{memorytest.NewMemStore(), a}, nil
		}})
	case "tools-example":
		toolprovider.Serve(toolprovider.ServeConfig{Info: info, Configure: func(_ context.Context, c plugin.Config) (toolprovider.Provider, error) {
			return toolsexample.Configure(c)
		}})
	case "slow":
		toolprovider.Serve(toolprovider.ServeConfig{Info: info, Configure: tools(slowTools())})
	case "crash-in-call":
		m := toolprovider.NewMux()
		m.Handle(toolprovider.Tool{Name: "crash", Effect: announce.EffectPure}, func(context.Context, toolprovider.Call) (toolprovider.Result, error) {
			os.Exit(3)
			return toolprovider.Result{}, nil
		})
		toolprovider.Serve(toolprovider.ServeConfig{Info: info, Configure: tools(m)})
	case "stdout-noise":
		fmt.Println("hello from a plugin that forgot stdout is not its own")
		toolprovider.Serve(toolprovider.ServeConfig{Info: info, Configure: tools(echoMux())})
	case "bad-cookie":
		goplugin.Serve(&goplugin.ServeConfig{
			HandshakeConfig: goplugin.HandshakeConfig{ProtocolVersion: 1, MagicCookieKey: "NEXUS_PLUGIN", MagicCookieValue: "not-the-cookie"},
			Plugins:         goplugin.PluginSet{"tool_provider": toolprovider.ServerPlugin(toolprovider.ServeConfig{Info: info, Configure: tools(echoMux())})},
		})
	case "protocol-2":
		goplugin.Serve(&goplugin.ServeConfig{
			HandshakeConfig:  goplugin.HandshakeConfig{MagicCookieKey: plugin.MagicCookieKey, MagicCookieValue: plugin.MagicCookieValue},
			VersionedPlugins: map[int]goplugin.PluginSet{2: {"tool_provider": toolprovider.ServerPlugin(toolprovider.ServeConfig{Info: info, Configure: tools(echoMux())})}},
			GRPCServer:       goplugin.DefaultGRPCServer,
		})
	case "wrong-kind":
		toolprovider.Serve(toolprovider.ServeConfig{Info: info, Configure: tools(echoMux())})
	case "reserved-name":
		m := echoMux()
		m.Handle(toolprovider.Tool{Name: "delegate_task", Effect: announce.EffectPure}, echoHandler)
		toolprovider.Serve(toolprovider.ServeConfig{Info: info, Configure: tools(m)})
	case "kernel-name":
		m := echoMux()
		m.Handle(toolprovider.Tool{Name: "skill", Effect: announce.EffectPure}, echoHandler)
		toolprovider.Serve(toolprovider.ServeConfig{Info: info, Configure: tools(m)})
	case "too-many-tools":
		m := toolprovider.NewMux()
		for i := range announce.MaxTools + 1 {
			m.Handle(toolprovider.Tool{Name: "t" + strconv.Itoa(i), Effect: announce.EffectPure}, echoHandler)
		}
		toolprovider.Serve(toolprovider.ServeConfig{Info: info, Configure: tools(m)})
	case "configure-unavailable":
		toolprovider.Serve(toolprovider.ServeConfig{Info: info, Configure: func(context.Context, plugin.Config) (toolprovider.Provider, error) {
			return nil, fmt.Errorf("%w: database is down", plugin.ErrUnavailable)
		}})
	case "configure-invalid":
		toolprovider.Serve(toolprovider.ServeConfig{Info: info, Configure: func(context.Context, plugin.Config) (toolprovider.Provider, error) {
			return nil, fmt.Errorf("%w: root is required", plugin.ErrConfigInvalid)
		}})
	case "panic-in-handler":
		m := echoMux()
		m.Handle(toolprovider.Tool{Name: "boom", Effect: announce.EffectPure}, func(context.Context, toolprovider.Call) (toolprovider.Result, error) {
			panic("handler bug")
		})
		toolprovider.Serve(toolprovider.ServeConfig{Info: info, Configure: tools(m)})
	case "oversized-capture":
		m := toolprovider.NewMux()
		m.Handle(toolprovider.Tool{Name: "big", Effect: announce.EffectPure}, func(context.Context, toolprovider.Call) (toolprovider.Result, error) {
			data := make([]byte, MaxCaptureBytes+1)
			return toolprovider.Result{
				Blocks:   []toolprovider.Block{toolprovider.LinkBlock(toolprovider.ResourceLink{URI: "capture:big", Name: "big.bin"})},
				Captures: []toolprovider.Capture{{Ref: "big", Filename: "big.bin", Data: data}},
			}, nil
		})
		toolprovider.Serve(toolprovider.ServeConfig{Info: info, Configure: tools(m)})
	case "env":
		m := toolprovider.NewMux()
		m.Handle(toolprovider.Tool{Name: "env", Effect: announce.EffectPure}, func(context.Context, toolprovider.Call) (toolprovider.Result, error) {
			env := os.Environ()
			slices.Sort(env)
			return toolprovider.Result{Text: strings.Join(env, "\n")}, nil
		})
		toolprovider.Serve(toolprovider.ServeConfig{Info: info, Configure: tools(m)})
	case "reannounce":
		toolprovider.Serve(toolprovider.ServeConfig{Info: info, Configure: func(context.Context, plugin.Config) (toolprovider.Provider, error) {
			return newChangingTools(), nil
		}})
	case "lost-answer":
		toolprovider.Serve(toolprovider.ServeConfig{Info: info, Configure: tools(lostAnswerTools())})
	case "tools-1.0":
		// What a plugin built with protocol 1.0 serves: minor 0, no WatchAnnouncement, no
		// revision and no lost-answer kind, however its provider behaves.
		goplugin.Serve(&goplugin.ServeConfig{
			HandshakeConfig: plugin.Handshake,
			VersionedPlugins: map[int]goplugin.PluginSet{1: {"tool_provider": toolprovider.ServerPluginAtMinor(toolprovider.ServeConfig{
				Info: info, Configure: func(context.Context, plugin.Config) (toolprovider.Provider, error) { return newChangingTools(), nil },
			}, 0)}},
			GRPCServer: goplugin.DefaultGRPCServer,
		})
	case "closer":
		toolprovider.Serve(toolprovider.ServeConfig{Info: info, Configure: func(context.Context, plugin.Config) (toolprovider.Provider, error) {
			return closingTools{echoMux()}, nil
		}})
	case "host":
		runHostHelper()
	default:
		fmt.Fprintf(os.Stderr, "unknown scenario %q\n", name)
		os.Exit(2)
	}
}

func echoHandler(_ context.Context, c toolprovider.Call) (toolprovider.Result, error) {
	return toolprovider.Result{Text: "echo " + string(c.Input), Title: "attempt " + strconv.Itoa(c.Claim.Attempt)}, nil
}

func echoMux() *toolprovider.Mux {
	m := toolprovider.NewMux()
	m.Handle(toolprovider.Tool{Name: "echo", Description: "Echo.", InputSchema: json.RawMessage(`{"type":"object"}`), Effect: announce.EffectPure}, echoHandler)
	return m
}

type announcing struct {
	*memorytest.MemStore
	a announce.Announcement
}

func (a announcing) Announce(context.Context) (announce.Announcement, error) { return a.a, nil }

// blockWhileFile marks a call as started (a file named for the process) and blocks while the
// shared directory holds a "block" file, or until ctx ends.
func blockWhileFile(ctx context.Context) error {
	dir := os.Getenv(envDir)
	_ = os.WriteFile(filepath.Join(dir, "started-"+strconv.Itoa(os.Getpid())), nil, 0o600)
	for {
		if _, err := os.Stat(filepath.Join(dir, "block")); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// slowStore blocks writes and edits (the crash tests' mid-call window).
type slowStore struct{ *memorytest.MemStore }

func (s slowStore) Write(ctx context.Context, req *memory.WriteRequest) (*memory.WriteResponse, error) {
	if err := blockWhileFile(ctx); err != nil {
		return nil, err
	}
	return s.MemStore.Write(ctx, req)
}

func (s slowStore) Edit(ctx context.Context, req *memory.EditRequest) (*memory.EditResponse, error) {
	if err := blockWhileFile(ctx); err != nil {
		return nil, err
	}
	return s.MemStore.Edit(ctx, req)
}

// slowTools serves a replayable and a non-replayable tool that both block.
func slowTools() *toolprovider.Mux {
	m := toolprovider.NewMux()
	h := func(ctx context.Context, c toolprovider.Call) (toolprovider.Result, error) {
		if err := blockWhileFile(ctx); err != nil {
			return toolprovider.Result{}, err
		}
		return echoHandler(ctx, c)
	}
	m.Handle(toolprovider.Tool{Name: "slow_pure", Effect: announce.EffectPure}, h)
	m.Handle(toolprovider.Tool{Name: "slow_write", Effect: announce.EffectWrite}, h)
	return m
}

// changingTools is a provider whose tool list changes (protocol 1.1): grow adds "grown", shrink
// removes it, poison adds a kernel name the host refuses, and lost answers ErrOutcomeUnknown.
// For the benchmark, flip adds or removes "flipped" and answers when, and stamp answers when it
// answered.
type changingTools struct {
	*toolprovider.Revisions
	mu    sync.Mutex
	extra []string
}

func newChangingTools() *changingTools { return &changingTools{Revisions: toolprovider.NewRevisions()} }

func (c *changingTools) Announce(context.Context) (announce.Announcement, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := announce.Announcement{}
	for _, n := range append([]string{"echo", "grow", "shrink", "poison", "lost"}, c.extra...) {
		a.Tools = append(a.Tools, announce.Tool{Name: n, EffectProfile: announce.Announced(announce.EffectWrite)})
	}
	return a, nil
}

func (c *changingTools) Call(ctx context.Context, call toolprovider.Call) (toolprovider.Result, error) {
	change := func(edit func()) (toolprovider.Result, error) {
		c.mu.Lock()
		edit()
		c.mu.Unlock()
		c.Advance()
		return toolprovider.Result{Text: "revision " + strconv.FormatUint(c.AnnouncementRevision(), 10)}, nil
	}
	switch call.Tool {
	case "grow":
		return change(func() { c.extra = append(c.extra, "grown") })
	case "shrink":
		return change(func() { c.extra = slices.DeleteFunc(c.extra, func(n string) bool { return n == "grown" }) })
	case "poison":
		return change(func() { c.extra = append(c.extra, "delegate_task") })
	case "lost":
		return toolprovider.Result{}, fmt.Errorf("the server exited mid-call: %w", toolprovider.ErrOutcomeUnknown)
	case "flip":
		// The benchmark's change: the time it was made, then the change.
		at := time.Now().UnixNano()
		c.mu.Lock()
		if slices.Contains(c.extra, "flipped") {
			c.extra = slices.DeleteFunc(c.extra, func(n string) bool { return n == "flipped" })
		} else {
			c.extra = append(c.extra, "flipped")
		}
		c.mu.Unlock()
		c.Advance()
		return toolprovider.Result{Text: strconv.FormatInt(at, 10)}, nil
	case "stamp":
		return toolprovider.Result{Text: strconv.FormatInt(time.Now().UnixNano(), 10)}, nil
	}
	return echoHandler(ctx, call)
}

// lostAnswerTools lose their answers (protocol 1.1): lost_pure always (replayable), lost_once on
// its first attempt only (replayable), lost_write always (not replayable).
func lostAnswerTools() *toolprovider.Mux {
	m := toolprovider.NewMux()
	lost := func(context.Context, toolprovider.Call) (toolprovider.Result, error) {
		return toolprovider.Result{}, fmt.Errorf("the server exited mid-call: %w", toolprovider.ErrOutcomeUnknown)
	}
	m.Handle(toolprovider.Tool{Name: "lost_pure", Effect: announce.EffectPure}, lost)
	m.Handle(toolprovider.Tool{Name: "lost_write", Effect: announce.EffectWrite}, lost)
	m.Handle(toolprovider.Tool{Name: "lost_once", Effect: announce.EffectPure}, func(ctx context.Context, c toolprovider.Call) (toolprovider.Result, error) {
		if c.Claim.Attempt == 1 {
			return lost(ctx, c)
		}
		return toolprovider.Result{Text: "survived", Title: "attempt " + strconv.Itoa(c.Claim.Attempt)}, nil
	})
	return m
}

// closingTools records its Close in a "closed-<pid>" file of the shared directory.
type closingTools struct{ *toolprovider.Mux }

func (closingTools) Close() error {
	return os.WriteFile(filepath.Join(os.Getenv(envDir), "closed-"+strconv.Itoa(os.Getpid())), nil, 0o600)
}
