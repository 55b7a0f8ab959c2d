package conversations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/steps"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Receipt is what a create or append accepted (docs/api.md#runs).
type Receipt struct {
	AcceptedTaskKeys   []string `json:"accepted_task_keys"`
	DeliverableTaskKey string   `json:"deliverable_task_key"`
	Revision           int64    `json:"revision"`
}

// Created is the answer of the create door.
type Created struct {
	Run      *RunDoc
	Receipt  Receipt
	Replayed bool
}

// Replay is a request's idempotency (docs/api.md#conventions): the Idempotency-Key ("" for none)
// and the request's canonical JSON, which a repeat under the same key must match. The door
// canonicalises what it was sent (sdk/jsonwire), only when a key was given: without one nothing reads
// it.
type Replay struct {
	Key         string
	Fingerprint []byte
}

// CreateRunRequest is the create door's request: the caller, the run (core/steps' grammar:
// Run.Check judges it here, the engine its default Runner and steps) and its idempotency. The
// HTTP door decodes a body's "run" into it; an in-process caller builds it with Go values.
type CreateRunRequest struct {
	Actor  *runs.Actor
	Run    steps.Run
	Replay Replay
}

// CreateRun is the create door (docs/api.md#runs). An Actor the door left unresolved has its
// standing read by the statement that writes the run (runs.Engine.CreateInStatement), or first,
// through Actor.Resolve: before a refusal of the body (the standing's word comes first) and
// before a keyed create, whose idempotency scope is the workspace's.
func (d *Doors) CreateRun(ctx context.Context, req *CreateRunRequest) (*Created, error) {
	a, in, key, canon := req.Actor, &req.Run, req.Replay.Key, req.Replay.Fingerprint
	if key != "" {
		var err error
		if a, err = a.Resolve(ctx, d.e.Reader()); err != nil {
			return nil, err
		}
	}
	scope := fmt.Sprintf("runs:%d:%s:%s", a.WorkspaceID, a.Kind, a.PublicID)
	if key != "" {
		if c, found, err := d.replayCreate(ctx, a, scope, key, canon); found || err != nil {
			return c, err
		}
	}
	if err := in.Check(); err != nil {
		if _, rerr := a.Resolve(ctx, d.e.Reader()); rerr != nil {
			return nil, rerr
		}
		return nil, err
	}
	if key == "" {
		// Without a key, a new run is a candidate for one statement (runs.Engine.CreateInStatement);
		// with one, the idempotency record is a second write, and the run is a transaction.
		c, err := d.e.CreateInStatement(ctx, a, in)
		if err == nil {
			// A standalone run's document reads nothing, so a create is never reported failed
			// once its run is written.
			return createdOf(ctx, d.e.Reader(), c)
		}
		if !errors.Is(err, runs.ErrNeedsTransaction) {
			return nil, err
		}
	}
	var created *Created
	err := d.e.Write(ctx, func(x *runs.Tx) error {
		a := a
		if a.Reread != nil {
			// The transaction stands on the standing it reads itself (runs.Actor.Reread).
			var err error
			if a, err = a.Reread(ctx, x.Tx); err != nil {
				return err
			}
		}
		c, err := x.CreateRun(ctx, a, in)
		if err != nil {
			return err
		}
		if created, err = createdOf(ctx, x.Tx, c); err != nil {
			return err
		}
		if key != "" {
			r := c.Run
			res, _ := json.Marshal(struct {
				Run     string  `json:"run_public_id"`
				Receipt Receipt `json:"receipt"`
			}{r.PublicID, created.Receipt})
			if err := store.InsertIdempotency(ctx, x.Tx, scope, key, string(canon), string(res), r.CreatedAt, r.CreatedAt-runs.IdempotencyTTL.Milliseconds()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && key != "" && store.IsUniqueViolation(err) {
		// A concurrent request with the same key committed first: replay or refuse against it.
		if c, found, err := d.replayCreate(ctx, a, scope, key, canon); found || err != nil {
			return c, err
		}
	}
	return created, err
}

// createdOf is the create door's answer for a run as written: its document (from the rows as
// written, not read back) and its receipt.
func createdOf(ctx context.Context, q store.Querier, c *runs.CreatedRun) (*Created, error) {
	doc, err := runDocOf(ctx, q, c.Run, c.Trace, false)
	if err != nil {
		return nil, err
	}
	return &Created{Run: doc, Receipt: Receipt{AcceptedTaskKeys: c.Keys, DeliverableTaskKey: c.Run.DeliverableTaskKey, Revision: 1}}, nil
}

func (d *Doors) replayCreate(ctx context.Context, a *runs.Actor, scope, key string, canon []byte) (*Created, bool, error) {
	now := d.e.NowMS()
	q := d.e.Reader()
	rec, err := store.LookupIdempotency(ctx, q, scope, key, now-runs.IdempotencyTTL.Milliseconds())
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	if same, _ := jsonwire.Equal([]byte(rec.Body), canon); !same {
		return nil, true, conflict(CodeIdempotencyEnvelopeMismatch, "The Idempotency-Key %s was used with a different body.", key)
	}
	var res struct {
		Run     string  `json:"run_public_id"`
		Receipt Receipt `json:"receipt"`
	}
	if err := json.Unmarshal([]byte(rec.Result), &res); err != nil {
		return nil, true, err
	}
	r, err := store.RunByPublicID(ctx, q, a.WorkspaceID, res.Run)
	if err != nil {
		return nil, true, err
	}
	doc, err := runDoc(ctx, q, r, false)
	if err != nil {
		return nil, true, err
	}
	return &Created{Run: doc, Receipt: res.Receipt, Replayed: true}, true, nil
}
