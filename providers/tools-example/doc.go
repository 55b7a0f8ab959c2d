// Package toolsexample is a small, deterministic third-party tool provider built against the
// SDK alone (docs/plugins.md): an echo with a schema and structured content, a structure-only
// statistics tool, a report that returns a CSV capture linked from its content, and a control
// tool that fails, errors or sleeps on request so hosts can test those paths.
//
// It uses no clock, no randomness and no network, so golden files pin every result byte for
// byte. It is a library; the plugin binary that serves it lives in cmd/.
package toolsexample
