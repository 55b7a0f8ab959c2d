// Package announce holds what every party that names a tool must agree on: the kernel's
// name table (the twenty kernel tools with their canonical and wire spellings and their
// classes), the reserved and overridable namespaces, the name grammars, and the effect-profile
// vocabulary with its consistency and replayable rules.
//
// It is the one place these facts are defined. The kernel registry builds its entries from
// this table, and the announcement checks of the HTTP door and the plugin host read it, so a
// plugin author who imports only this SDK agrees with the kernel on what a kernel name is.
// The package imports nothing from the rest of the project, and it never derives a wire name
// from a canonical one: both spellings are stored side by side.
package announce
