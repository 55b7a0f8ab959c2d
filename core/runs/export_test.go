package runs

import "context"

// Register records e's instance in the store, as Start does before any worker claims.
func Register(ctx context.Context, e *Engine) error { return e.inst.Register(ctx) }

// Beat renews e's heartbeat once, as its heartbeat loop does every interval.
func Beat(ctx context.Context, e *Engine) { e.inst.Beat(ctx) }

// ErrLostClaim is the error of a commit the claim fence refused.
var ErrLostClaim = errLostClaim
