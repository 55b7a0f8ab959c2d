// Package profiles owns what acceptance reads from the store besides the run itself: each
// agent's standing profile (its explicit declaration in stored form, the import fields,
// instructions, default model, approval mode and rules) and each executor's current
// announcement. It validates a profile replacement field by field in the order of the profile
// door, stores it atomically, reads it back in the door's form, previews what new work would
// freeze (the tool assembly), and hands the run engine the profile "as it stands now" together
// with the Runners acceptance may read, so that every door freezes through one path.
//
// Every declaration rule is core/declare's: this package only feeds it values read from the
// store and returns its refusals unchanged, so that each caller reports them through its own
// door. A refusal of another profile field (approval mode and rules, default model,
// instructions) is built the same way, rooted at the declaration with declare.FieldRefusal. It
// knows no HTTP, and it never re-resolves anything after acceptance: accepted work keeps what it
// froze.
package profiles
