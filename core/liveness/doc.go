// Package liveness is one server instance's registration and heartbeat in the store
// (docs/operations.md#instance-liveness-and-takeover): the instance registers at start under a
// fresh id, renews its heartbeat every interval, learns at a renewal that the others had declared
// it dead (it was paused past the timeout), says whether its own heartbeat is current for /readyz,
// and declares itself dead at a clean stop.
//
// What the others do with a dead instance's claims, the takeover, is the run engine's
// (core/runs): liveness only keeps the row that tells them. It builds on the store alone.
package liveness
