// Package projection turns a frozen tool set into what a model provider is offered: which
// entries are offered (the deferral rule of the discovery pair, skill callables without a frozen
// catalog entry left out), each entry stripped of alias facts, routes and defer_loading with the
// strict default added, the skills block of the leading user item, the sealed request value
// that records exactly what was offered, and the two provider wire shapes (OpenAI-style
// function tools, Anthropic-style tools).
//
// It is pure: it reads only the frozen set and catalog it is given, never a store, a clock or a
// live announcement, and never rewrites the stored declaration.
package projection
