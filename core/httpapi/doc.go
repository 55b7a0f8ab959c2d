// Package httpapi is the only package that knows HTTP. It routes with the standard library's
// method patterns, seals the two planes (executor tokens only under /agent_api/v1/executor, member
// tokens everywhere else under /agent_api/v1), bounds request bodies, assigns request ids,
// recovers panics, and writes every failure through one function as
// {"error":{"code","message",…}}. Handlers call services and return their typed refusals; they
// hold no business rule of their own.
//
// Every door decodes its body once, strictly (body.go: an unknown key refused by name, malformed
// JSON at its byte offset), into the typed request of the service it calls, a type the service's
// package declares; headers become typed fields (an Idempotency-Key and the body's canonical JSON
// as conversations.Replay). No service sees a body, a header or a status. A door whose documented order
// puts a row's lookup before the body (extend, commit, append, resolution) decodes the body before
// the call all the same and hands the first refusal of the body's own rules to the service as the
// request's Invalid: the service answers it at the body's place, so the door's whole order is in
// one place, the service method. The commit and resolution doors hand the envelope the body's
// members (envelope.Decode), which it judges later, at its own place. The run doors and the
// conversation doors decode their bodies into the typed run, steps, conversation and message of
// core/steps and core/conversations (steps.Run, steps.DecodeList, conversations.NewConversation and
// Message), whose decoders never refuse: what a body writes that the types cannot hold rides
// beside their fields, for the grammar to refuse at its place.
package httpapi
