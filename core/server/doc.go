// Package server wires the kernel together: it resolves the server settings (flags, environment,
// HCL file, defaults), opens and migrates the store, bootstraps an empty deployment, builds the
// services and the HTTP API, serves, and drains on shutdown. It also runs the plugin host
// (plugins/), handing it core/executors' PluginPlane as its ExecutorPlane, holds readiness until
// each plugin had its first start, reloads the catalog from the settings file, and stops the
// plugins at shutdown. With tls_cert_file and tls_key_file it serves TLS, reading the key pair
// before it opens the store and again on ReloadTLS (SIGHUP), when a pair that cannot be read
// leaves the current one serving (docs/operations.md#tls). It owns no behaviour of its own beyond that order of things: no plane
// logic, no request decoding.
package server
