package server

import (
	"fmt"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"

	"github.com/nexuskernel/nexus/core/liveness"
)

// KernelSettings is the kernel block of the settings file
// (docs/development.md#how-the-kernel-runs-work): durations are Go duration strings. Zero values
// take the engine's defaults.
type KernelSettings struct {
	Workers       int
	ModelTimeout  time.Duration
	SweepInterval time.Duration
	// HeartbeatInterval and HeartbeatTimeout are the instance heartbeat's period and how long a
	// silent instance lives (docs/operations.md#several-instances).
	HeartbeatInterval time.Duration
	HeartbeatTimeout  time.Duration
}

// kernelFile is the HCL shape of the block; the rest of the body goes on to the next reader.
type kernelFile struct {
	Kernel *kernelBlock `hcl:"kernel,block"`
	Remain hcl.Body     `hcl:",remain"`
}

type kernelBlock struct {
	Workers           *int    `hcl:"workers,optional"`
	ModelTimeout      *string `hcl:"model_timeout,optional"`
	SweepInterval     *string `hcl:"sweep_interval,optional"`
	HeartbeatInterval *string `hcl:"heartbeat_interval,optional"`
	HeartbeatTimeout  *string `hcl:"heartbeat_timeout,optional"`
}

// HeartbeatSpanRefusal refuses a heartbeat timeout shorter than MinHeartbeatRenewals intervals
// (docs/operations.md#several-instances).
const HeartbeatSpanRefusal = "kernel.heartbeat_timeout must be at least %d times kernel.heartbeat_interval"

// maxKernelWorkers bounds kernel.workers: each worker holds a database connection while it
// claims, and the store's pool is DefaultMaxConns-sized.
const maxKernelWorkers = 256

// decodeKernel reads the kernel block from body and returns the rest.
func decodeKernel(body hcl.Body) (*KernelSettings, hcl.Body, error) {
	var kf kernelFile
	if diags := gohcl.DecodeBody(body, nil, &kf); diags.HasErrors() {
		return nil, nil, fmt.Errorf("%s", diagText(diags))
	}
	if kf.Kernel == nil {
		return nil, kf.Remain, nil
	}
	k := &KernelSettings{}
	if kf.Kernel.Workers != nil {
		if *kf.Kernel.Workers < 1 || *kf.Kernel.Workers > maxKernelWorkers {
			return nil, nil, fmt.Errorf("kernel.workers must be from 1 to %d", maxKernelWorkers)
		}
		k.Workers = *kf.Kernel.Workers
	}
	dur := func(name string, v *string) (time.Duration, error) {
		if v == nil {
			return 0, nil
		}
		d, err := time.ParseDuration(*v)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("kernel.%s must be a positive Go duration such as \"10m\"", name)
		}
		return d, nil
	}
	var err error
	if k.ModelTimeout, err = dur("model_timeout", kf.Kernel.ModelTimeout); err != nil {
		return nil, nil, err
	}
	if k.SweepInterval, err = dur("sweep_interval", kf.Kernel.SweepInterval); err != nil {
		return nil, nil, err
	}
	if k.HeartbeatInterval, err = dur("heartbeat_interval", kf.Kernel.HeartbeatInterval); err != nil {
		return nil, nil, err
	}
	if k.HeartbeatTimeout, err = dur("heartbeat_timeout", kf.Kernel.HeartbeatTimeout); err != nil {
		return nil, nil, err
	}
	interval, timeout := k.HeartbeatInterval, k.HeartbeatTimeout
	if interval == 0 {
		interval = liveness.DefaultHeartbeatInterval
	}
	if timeout == 0 {
		timeout = liveness.DefaultHeartbeatTimeout
	}
	if timeout < liveness.MinHeartbeatRenewals*interval {
		return nil, nil, fmt.Errorf(HeartbeatSpanRefusal, liveness.MinHeartbeatRenewals)
	}
	return k, kf.Remain, nil
}
