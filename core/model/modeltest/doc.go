// Package modeltest is the test kit every model provider adapter runs: a fake provider server
// that replays hand-written answers in the real wire format (status line, headers, body; SSE
// bodies with pause, cut and hang directives), a runner of txtar case files that loads the
// case's model.hcl through the real configuration loader, sends its sealed request through the
// adapter under the retry decorator on a fake clock, and compares the exact request body, the
// request headers and the neutral result with the case's want sections, and the checks that no
// credential reaches a log line, a result or a detail.
//
// It imports core/model only; tests of the adapters and the end-to-end suite use it.
package modeltest
