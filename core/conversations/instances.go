package conversations

import (
	"context"

	"github.com/nexuskernel/nexus/core/store"
)

// InstancesRequest asks for the live instances.
type InstancesRequest struct{}

// InstanceView is one live instance as GET /agent_api/v1/instances shows it (docs/api.md#instances).
type InstanceView struct {
	ID          string `json:"id"`
	Host        string `json:"host"`
	Version     string `json:"version"`
	StartedAt   string `json:"started_at"`
	HeartbeatAt string `json:"heartbeat_at"`
	// Self is set on the instance that answered.
	Self bool `json:"self"`
}

// InstancesResponse lists the live instances, oldest start first.
type InstancesResponse struct {
	Instances         []InstanceView `json:"instances"`
	HeartbeatInterval string         `json:"heartbeat_interval"`
	HeartbeatTimeout  string         `json:"heartbeat_timeout"`
}

// Instances is the instance listing (docs/api.md#instances): the instances whose heartbeat is
// current, as the store says.
func (d *Doors) Instances(ctx context.Context, _ *InstancesRequest) (*InstancesResponse, error) {
	interval, timeout := d.e.Heartbeat()
	rows, err := store.LiveInstances(ctx, d.e.Reader(), d.e.NowMS()-timeout.Milliseconds())
	if err != nil {
		return nil, err
	}
	out := &InstancesResponse{Instances: make([]InstanceView, 0, len(rows)),
		HeartbeatInterval: interval.String(), HeartbeatTimeout: timeout.String()}
	for _, r := range rows {
		out.Instances = append(out.Instances, InstanceView{ID: r.ID, Host: r.Host, Version: r.Version,
			StartedAt: store.FormatMillis(r.StartedAt), HeartbeatAt: store.FormatMillis(r.HeartbeatAt), Self: r.ID == d.e.InstanceID()})
	}
	return out, nil
}
