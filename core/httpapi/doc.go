// Package httpapi is the only package that knows HTTP. It routes with the standard library's
// method patterns, seals the two planes (executor tokens only under /agent_api/v1/executor, member
// tokens everywhere else under /agent_api/v1), bounds request bodies, assigns request ids,
// recovers panics, and writes every failure through one function as
// {"error":{"code","message",…}}. Handlers call services and return their typed refusals; they
// hold no business rule of their own.
package httpapi
