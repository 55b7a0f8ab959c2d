package server

import (
	"reflect"
	"slices"
	"strconv"

	"github.com/nexuskernel/nexus/core/model"
)

// notApplied names the settings of the file, outside its plugin blocks, that differ between the
// file as the server started with it and the file as a reload reads it: a reload applies plugin
// blocks only, and these wait for a restart
// (docs/plugins.md#states-status-reload-and-restart). Top-level attributes come first, in the
// order of the settings table, then the kernel block, default_model, builtin_mock_models, the
// model_provider blocks by name and the model blocks by ref.
func notApplied(was, now Layer) []string {
	out := []string{}
	for _, a := range []struct {
		name     string
		was, now *string
	}{
		{"listen", was.Listen, now.Listen}, {"data_dir", was.DataDir, now.DataDir},
		{"database_url", was.DatabaseURL, now.DatabaseURL}, {"log_level", was.LogLevel, now.LogLevel},
		{"log_format", was.LogFormat, now.LogFormat},
	} {
		if (a.was == nil) != (a.now == nil) || (a.was != nil && *a.was != *a.now) {
			out = append(out, a.name)
		}
	}
	if !slices.Equal(was.FilePluginDirs, now.FilePluginDirs) {
		out = append(out, "plugin_dirs")
	}
	if !reflect.DeepEqual(was.Kernel, now.Kernel) {
		out = append(out, "kernel")
	}
	wm, nm := was.Models, now.Models
	if wm == nil {
		wm = &model.Config{}
	}
	if nm == nil {
		nm = &model.Config{}
	}
	if wm.DefaultModel != nm.DefaultModel {
		out = append(out, "default_model")
	}
	if !reflect.DeepEqual(wm.BuiltinMockModels, nm.BuiltinMockModels) {
		out = append(out, "builtin_mock_models")
	}
	providers := func(c *model.Config) map[string]model.ProviderConfig {
		m := map[string]model.ProviderConfig{}
		for _, p := range c.Providers {
			m[p.Name] = p
		}
		return m
	}
	out = append(out, changedKeys("model_provider", providers(wm), providers(nm))...)
	models := func(c *model.Config) map[string]model.Model {
		m := map[string]model.Model{}
		for _, x := range c.Models {
			m[x.Ref] = x
		}
		return m
	}
	return append(out, changedKeys("model", models(wm), models(nm))...)
}

// changedKeys names, sorted, the blocks of a kind added, removed or changed between was and now.
func changedKeys[V any](kind string, was, now map[string]V) []string {
	var keys []string
	for k, v := range was {
		if w, ok := now[k]; !ok || !reflect.DeepEqual(v, w) {
			keys = append(keys, k)
		}
	}
	for k := range now {
		if _, ok := was[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = kind + " " + strconv.Quote(k)
	}
	return out
}
