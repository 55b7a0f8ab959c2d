// Package refusal is the project's one refusal type, shared by the SDK and the server: a stable
// word (the code clients and operators match on), a sentence for people, the kind of refusal
// (which a door maps to one status), the extra keys a door defines (path, name, field, …) in the
// order they are added, the list of every failure where a validator reports several, and a cause
// for logs. It also defines, once, the words both sides answer with (validation_failed,
// parameter_invalid, content_too_large, …). It is the SDK's root beside sdk/jsonwire and imports
// only the standard library, so a plugin author, sdk/announce and core/refusal all build on it.
package refusal
