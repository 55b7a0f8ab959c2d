// Package server wires the kernel together: it resolves the server settings (flags, environment,
// HCL file, defaults), opens and migrates the store, bootstraps an empty deployment, builds the
// services and the HTTP API, serves, and drains on shutdown. It also runs the plugin host
// (plugins/): it implements the host's ExecutorPlane over core/executors, so every plugin is a
// managed tool_provider executor (one per workspace it serves) whose rows take the HTTP
// executors' claim, commit and expiry paths, holds readiness until each plugin had its first
// start, reloads the catalog from the settings file, and stops the plugins at shutdown. It owns
// no behaviour of its own beyond that order of things and that adapter.
package server
