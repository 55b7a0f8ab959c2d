// Package acceptance fills the engine's acceptance seams, which core/runs defines and core/server
// wires: Compiler is runs.Declarations over core/declare and core/projection (a model step's
// declaration frozen, a frozen set opened for a round), ProfileService is runs.Profiles over
// core/profiles (the answering agent's profile frozen onto a turn), and KernelSkillReader is
// runs.KernelSkills over kernel memory (the skill documents a kernel skill callable freezes).
//
// The engine asks, these decide: no run row is read or written here beyond what the accepting
// transaction hands in. It must not import core/conversations, core/kernel, core/executors,
// core/httpapi or core/server.
package acceptance
