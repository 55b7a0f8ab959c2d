// Package server wires the kernel together: it resolves the server settings (flags, environment,
// HCL file, defaults), opens and migrates the store, bootstraps an empty deployment, builds the
// services and the HTTP API, serves, and drains on shutdown. It also runs the plugin host
// (plugins/), handing it core/executors' PluginPlane as its ExecutorPlane, holds readiness until
// each plugin had its first start, reloads the catalog from the settings file, and stops the
// plugins at shutdown. It owns no behaviour of its own beyond that order of things: no plane
// logic, no request decoding.
package server
