// Package steps is the run and step grammar (docs/api.md#runs): the typed run a create carries
// (Run), its steps (Step: a Model or a Tool step, with their Route, ModelDefaults and
// Declaration), their refusal words, and the order they are judged in.
//
// An in-process caller builds a Run or a list of Steps with Go values and never writes JSON. The
// HTTP door decodes a body into the same types (UnmarshalJSON, DecodeList), strictly: a body can
// write what a Go value cannot hold (a number for a key, a null where the field takes none, a key
// the grammar does not know, an empty id where "" is the Go value's absence), and the decoder
// keeps that beside the fields, unexported, so that the grammar refuses it at its place with the
// word and path the field's own rule gives. A decode never fails and never refuses: refusing is
// the grammar's, in the documented order, after the lookups the door makes first
// (docs/development.md, "Doors that look a row up before the body").
//
// What the grammar judges alone it judges here: the run object (Run.Check: its shape, the
// kernel's edges, its fields, the approval mode and rules, the prompt mechanism, start) and every
// step's shape (Judge: the envelope's count, each step's verb and options, keys, failure policy,
// visibility, attachments' and results' shape, prompt, instructions, tool name, input and its
// bound, timeout, model_defaults, route), with every failure of an envelope listed and the first
// deciding (Refusal), and a key written twice (DuplicateKey). Where a check needs the store, the
// models catalog or the declaration compiler (a Runner's announcement, the caller's uploads, a
// declaration's freeze, a model's capabilities), Judge asks the engine through Lookups at the
// check's place, so that the order is written once, here. A declaration's own grammar is
// core/declare's, an approval rule's core/approval's.
//
// It must not import core/runs or anything above it: the engine (core/runs) judges its steps
// with it, the doors (core/conversations) the run object, and the HTTP door (core/httpapi)
// decodes into its types. It reads no row.
package steps
