// Package registry is the kernel tool catalog: the twenty kernel tools with their names,
// classes, effect profiles, description templates and parameter schema templates, the one
// render function that spells tool-name macros, and the exact bytes of the catalog route and
// the contract pack.
//
// Names and classes come from sdk/announce's name table, so the kernel and every announcement
// check agree on what a kernel name is; this package adds the texts and profiles. It imports
// no other core package and holds no mutable state: New builds an immutable value from
// embedded files, and every accessor hands out copies.
package registry
