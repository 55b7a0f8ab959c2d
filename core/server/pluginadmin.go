package server

import (
	"context"
	"regexp"
	"strconv"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/plugins"
)

// pluginAdmin serves the plugin routes over the server's host; reload reads the configuration
// file again (docs/plugins.md#states-status-reload-and-restart).
type pluginAdmin struct{ s *Server }

func (p pluginAdmin) Status() []plugins.Status { return p.s.plugins.Status() }

func (p pluginAdmin) StatusOf(name string) (plugins.Status, error) { return p.s.plugins.StatusOf(name) }

func (p pluginAdmin) Restart(ctx context.Context, name string) error {
	return p.s.plugins.Restart(ctx, name)
}

func (p pluginAdmin) Reload(ctx context.Context) (plugins.ReloadReport, error) {
	return p.s.Reload(ctx)
}

// diagLine finds the line of an HCL diagnostic in its text ("file:12,3-9: …").
var diagLine = regexp.MustCompile(`:(\d+),\d+`)

// Reload reads the configuration file again and applies its plugin catalog
// (docs/plugins.md#states-status-reload-and-restart): an invalid file changes nothing and answers
// 422 validation_failed with the file, line and message. Without a configuration file the catalog
// is empty. The report's NotApplied names the file's other settings that changed since the start,
// which a reload does not apply.
func (s *Server) Reload(ctx context.Context) (plugins.ReloadReport, error) {
	var cat *plugins.Catalog
	var file Layer
	if path := s.settings.ConfigFile; path != "" {
		l, err := FileLayer(path)
		if err != nil {
			s.log.Error("reload: the configuration is invalid; nothing changed", "file", path, "error", err)
			r := refusal.New(refusal.Unprocessable, refusal.CodeValidationFailed, err.Error()).With("file", path)
			if m := diagLine.FindStringSubmatch(err.Error()); m != nil {
				if n, err := strconv.Atoi(m[1]); err == nil {
					r = r.With("line", n)
				}
			}
			return plugins.ReloadReport{}, r
		}
		cat, file = l.Plugins, l
	}
	rep, err := s.plugins.Reload(ctx, cat)
	rep.NotApplied = notApplied(s.settings.file, file)
	if len(rep.NotApplied) > 0 {
		s.log.Warn("reload: settings outside the plugin blocks changed; they apply at the next restart", "not_applied", rep.NotApplied)
	}
	return rep, err
}
