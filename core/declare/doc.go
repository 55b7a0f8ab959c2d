// Package declare is the declaration compiler: it reads the tool lists agents author (plain
// function tools, Runner-routed tools, plain kernel tools and aliases), refuses a wrong one with
// the exact word, path and check order of the declaration rules, renders kernel texts with the
// set's own spellings, and stores the result sorted by callable. It also parses the import
// fields, freezes a declaration onto new work (kernel imports, Runner imports with qualified
// names, narrowing, route checks, the frozen environment and skill catalog), narrows a frozen
// set by callable name, and resolves a model's call under an alias into the kernel tool's name
// and input.
//
// Everything here is a pure function of its inputs and the kernel registry: no store, no clock,
// no HTTP. Announcements, eligibility and skill rows come in as plain values that the caller
// read; refusals come out as *Refusal, which a Door turns into the refusal envelope of the route
// that asked. Texts are rendered only through core/registry's render functions, and wire names
// are read from the registry, never derived.
package declare
