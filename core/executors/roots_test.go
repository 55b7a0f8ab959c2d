package executors

import (
	"testing"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/plugins"
)

// TestHeldBy: a root is held only by another live instance serving the plugin from another root:
// the instance's own row (an earlier root of its own), a row held unready and a row of the same
// root never hold it; the refusal names the oldest such instance's root.
func TestHeldBy(t *testing.T) {
	t.Parallel()
	mine := plugins.StorageRoot{ID: "aaaa", Path: "/srv/a"}
	row := func(inst, id string, serving bool) store.PluginRoot {
		return store.PluginRoot{InstanceID: inst, Plugin: "memory-fs", RootID: id, RootPath: "/p/" + id, Serving: serving, Host: "h-" + inst}
	}
	for _, c := range []struct {
		name string
		rows []store.PluginRoot
		in   string // the instance whose root is in use, "" for none
	}{
		{"alone", nil, ""},
		{"its own earlier root", []store.PluginRoot{row("inst_self", "bbbb", true)}, ""},
		{"the same root elsewhere", []store.PluginRoot{row("inst_1", "aaaa", true)}, ""},
		{"another root held unready", []store.PluginRoot{row("inst_1", "bbbb", false)}, ""},
		{"another root serving", []store.PluginRoot{row("inst_1", "aaaa", true), row("inst_2", "cccc", true), row("inst_3", "dddd", true)}, "inst_2"},
	} {
		r := heldBy("inst_self", "memory-fs", mine, c.rows)
		switch {
		case c.in == "" && r != nil:
			t.Errorf("%s: held: %v", c.name, r)
		case c.in != "" && (r == nil || r.Code != CodeMemoryRootSplit || r.Kind != refusal.Conflict):
			t.Errorf("%s: %v, want %s", c.name, r, CodeMemoryRootSplit)
		case c.in != "":
			want := "This instance's memory-fs root /srv/a (ROOT_ID aaaa) is not the root in use, /p/cccc (ROOT_ID cccc) on instance inst_2 (host h-inst_2): "
			if len(r.Message) < len(want) || r.Message[:len(want)] != want {
				t.Errorf("%s: message %q", c.name, r.Message)
			}
		}
	}
}
