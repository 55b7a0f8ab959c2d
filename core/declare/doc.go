// Package declare is the declaration compiler: it reads the tool lists agents author (plain
// function tools, Runner-routed tools, plain kernel tools and aliases), refuses a wrong one with
// the exact word, path and check order of the declaration rules, renders kernel texts with the
// set's own spellings, and stores the result sorted by callable. It also parses the import
// fields, reads a model step's declaration into its acceptance (Step: which Runners and whether
// kernel skill documents the caller must read for it), freezes a declaration onto new work
// (bare names filled from the tool providers, kernel imports, Runner imports with qualified
// names, tool-provider imports by name or pattern or from a profile's pins, narrowing, route
// checks, the frozen environment and skill catalog), narrows a frozen set by callable name, and
// resolves a model's call under an alias into the kernel tool's name and input. An import is one
// concept, a source and a selector (docs/agent-tools.md#imports); its selectors match with
// sdk/announce's one glob.
//
// Everything here is a pure function of its inputs and the kernel registry: no store, no clock,
// no HTTP. Announcements, eligibility, tool providers, pins and skill rows come in as plain
// values that the caller read. Texts are rendered only through core/registry's render functions, and wire names are
// read from the registry, never derived.
//
// # Refusals
//
// The compiler reports its first failing check only, as the one refusal type (core/refusal's
// Error) rooted at the declaration (docs/agent-tools.md#declaration-refusals):
//
//   - Kind is Unprocessable, Code the word, Message the detail sentence (tests and clients never
//     read it);
//   - Errors holds one Problem: the word, the unprefixed path (the request field followed by the
//     path inside it, "tool_definitions[1].params.bg.maps_to") and, as Name, the tool name where
//     there is one;
//   - Extra holds the located facts under their wire keys, each only when set, in this order:
//     field (FieldToolDefinitions, FieldKernelTools, …), callable, runner_executor_public_id,
//     tool_name.
//
// A refusal of the assembled set rather than of a request field (the bound of the final set, an
// imported tool that still collides after qualification, a route whose Runner is not eligible or
// does not serve the tool) has an empty path: it names the field it counts against, if any, and
// the callable. FieldRefusal builds a refusal of one request field for the callers that check
// fields of their own (core/profiles). A Door re-roots a refusal rooted at the declaration into
// the envelope of the route that asked: the prefix, status, code and extras of that route.
package declare
