// Package memoryfs is the filesystem memory store: a memory.Provider that keeps one file per
// document under a root directory, replaces documents atomically and durably (temporary file,
// fsync, rename, fsync of the directory), serializes mutations of an anchor both inside the
// process and across processes sharing the root (flock), and searches with the SDK's matcher
// under the caller's deadline (docs/plugins.md). Its root carries a marker, ROOT_ID, written once,
// by which a host tells one shared root from roots that only look alike
// (docs/operations.md#several-instances).
//
// It stores only: every input rule a model can break and every result text belong to
// sdk/memory's Engine. It imports nothing from the project beyond the SDK, and it is a library;
// the plugin binary that serves it lives in cmd/.
package memoryfs
