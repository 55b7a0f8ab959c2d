package uploads

import (
	"errors"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/store"
)

// Service stores and serves uploads over one store.
type Service struct {
	store      *store.Store
	now        func() time.Time
	detect     func([]byte) string
	visibility Visibility
	log        hclog.Logger
}

// Options configure a Service.
type Options struct {
	// DetectContentType is the content sniffer (net/http.DetectContentType, which recognises
	// PNG, JPEG, GIF, WebP and %PDF-): it reads at most SniffBytes of the head and answers a
	// type with its parameters. Required.
	DetectContentType func([]byte) string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Visibility decides whether a member other than the creator may read an upload; nil means
	// BindingVisibility.
	Visibility Visibility
	// Log receives what the service absorbs (a clean-up that failed); nil discards it.
	Log hclog.Logger
}

// New returns a Service over s.
func New(s *store.Store, o Options) (*Service, error) {
	if s == nil || o.DetectContentType == nil {
		return nil, errors.New("uploads: a store and Options.DetectContentType are required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Visibility == nil {
		o.Visibility = BindingVisibility{}
	}
	if o.Log == nil {
		o.Log = hclog.NewNullLogger()
	}
	return &Service{store: s, now: o.Now, detect: o.DetectContentType, visibility: o.Visibility, log: o.Log}, nil
}
