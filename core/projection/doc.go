// Package projection turns a frozen tool set into what a model provider is offered: which
// entries are offered (the deferral rule of the discovery pair, skill callables without a frozen
// catalog entry left out), each entry stripped of alias facts, routes and defer_loading with the
// strict default added, and the skills block of the leading user item. Open reads a model round's
// frozen set and skill catalog back as a Round, what the round driver offers each provider from.
//
// It holds no sealed-request model and no provider wire shape: the sealed request's types and
// encoding are core/model's, its assembly is core/runs', and each provider adapter under
// core/model writes its own wire shape.
//
// It is pure: it reads only the frozen set and catalog it is given, never a store, a clock or a
// live announcement, and never rewrites the stored declaration.
package projection
