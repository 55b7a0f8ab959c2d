package executors

import (
	"errors"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/uploads"
)

// Service is the executor plane's work side on one instance: the announcement door, the inbox,
// claim, claim read, extend and commit (docs/api.md#the-executor-plane). Every row it changes
// changes through the run engine's executor entry points, so that readiness, the run lifecycle and
// wake-ups follow exactly as they do for the kernel's own settles.
type Service struct {
	store   *store.Store
	engine  *runs.Engine
	uploads *uploads.Service
	now     func() time.Time
	log     hclog.Logger

	claims     *limiter
	claimReads *limiter
}

// Options build a Service. Store and Engine are required.
type Options struct {
	Store  *store.Store
	Engine *runs.Engine
	// Uploads resolves the captures a commit links; nil makes every link unknown_result_upload.
	Uploads *uploads.Service
	// Now is the clock of the rate limits; nil means the engine's clock, which every deadline
	// reads.
	Now func() time.Time
	Log hclog.Logger
	// ClaimsPerMinute and ClaimReadsPerMinute replace the rate limits (tests use small ones);
	// zero means the specified bound.
	ClaimsPerMinute     int
	ClaimReadsPerMinute int
}

// New returns the service.
func New(o Options) (*Service, error) {
	if o.Store == nil || o.Engine == nil {
		return nil, errors.New("executors: Options.Store and Engine are required")
	}
	if o.Now == nil {
		o.Now = o.Engine.Now
	}
	if o.Log == nil {
		o.Log = hclog.NewNullLogger()
	}
	if o.ClaimsPerMinute <= 0 {
		o.ClaimsPerMinute = ClaimsPerMinute
	}
	if o.ClaimReadsPerMinute <= 0 {
		o.ClaimReadsPerMinute = ClaimReadsPerMinute
	}
	return &Service{
		store: o.Store, engine: o.Engine, uploads: o.Uploads, now: o.Now, log: o.Log,
		claims:     newLimiter(o.ClaimsPerMinute, o.Now, "claims"),
		claimReads: newLimiter(o.ClaimReadsPerMinute, o.Now, "claim reads"),
	}, nil
}

func (s *Service) nowMS() int64 { return store.Millis(s.engine.Now()) }
