package runs

import "github.com/nexuskernel/nexus/core/store"

// Attention is one standing reason (docs/api.md#runs).
type Attention struct {
	Reason   string   `json:"reason"`
	TaskKeys []string `json:"task_keys"`
	Overflow int      `json:"overflow,omitempty"`
}

// AttentionOf lists the standing reasons, in order (docs/api.md#runs).
func AttentionOf(r *store.Run, tasks []store.TaskTrace, byKey map[string]*store.TaskTrace) []Attention {
	var halt, approvals, asks []string
	for i := range tasks {
		t := &tasks[i]
		switch t.Status {
		case StatusNeedsApproval:
			approvals = append(approvals, t.Key)
		case StatusAwaitingInput:
			asks = append(asks, t.Key)
		}
		if FailedStatus(t.Status) && t.OnFailure == OnFailureHalt {
			for j := range tasks {
				if tasks[j].Status == StatusWaiting && contains(AfterKeys(&tasks[j]), t.Key) {
					halt = append(halt, t.Key)
					break
				}
			}
		}
	}
	var out []Attention
	add := func(reason string, keys []string) {
		if len(keys) == 0 {
			return
		}
		a := Attention{Reason: reason, TaskKeys: keys}
		if len(keys) > MaxAttentionKeys {
			a.TaskKeys, a.Overflow = keys[:MaxAttentionKeys], len(keys)-MaxAttentionKeys
		}
		out = append(out, a)
	}
	if r.Status == RunNeedsAttention {
		add(ReasonHaltFailure, halt)
		if d := byKey[r.DeliverableTaskKey]; d != nil && Terminal(d.Status) && d.Status != StatusCompleted {
			add(ReasonDeliverableUnresolved, []string{d.Key})
		}
	}
	add(ReasonApprovalRequired, approvals)
	add(ReasonAwaitingHuman, asks)
	return out
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
