// Package announce holds what every party that names a tool must agree on: the kernel's
// name table (the twenty kernel tools with their canonical and wire spellings and their
// classes), the reserved and overridable namespaces, the name grammars, the effect-profile
// vocabulary with its consistency and replayable rules, and the announcement an executor
// makes with the one validator that checks it (Validate, ParseAnnouncement for the HTTP door's
// JSON body, ValidatePlugin for the plugin host).
//
// It is the one place these facts are defined. The kernel registry builds its entries from
// this table, and the HTTP announcement door and the plugin host call the same validation, so
// a plugin author who imports only this SDK agrees with the kernel on what a kernel name is and
// on what an announcement may say. The package imports nothing from the rest of the project
// but its own JSON walker (sdk/jsonwire, which the kernel's result envelope shares)
// and only the standard library (it stays light for plugin authors: input schemas are checked
// for shape, never compiled), it stores nothing and knows no transport, and it never derives
// a wire name from a canonical one: both spellings are stored side by side.
package announce
