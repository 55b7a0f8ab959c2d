package toolprovider

import (
	"context"
	"errors"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/sdk/announce"
)

type closing struct {
	closed int
	err    error
}

func (c *closing) Announce(context.Context) (announce.Announcement, error) {
	return announce.Announcement{}, nil
}
func (c *closing) Call(context.Context, Call) (Result, error) { return Result{}, nil }
func (c *closing) Close() error                               { c.closed++; return c.err }

// TestSlotClose: the process's exit closes a provider that is an io.Closer, once per exit, and a
// failing Close is only logged; a slot without a provider, or one that is no Closer, is left be.
func TestSlotClose(t *testing.T) {
	t.Parallel()
	(&providerSlot{}).close(hclog.NewNullLogger())
	s := &providerSlot{}
	s.set(NewMux())
	s.close(hclog.NewNullLogger())
	p := &closing{err: errors.New("child did not exit")}
	s.set(p)
	s.close(hclog.NewNullLogger())
	if p.closed != 1 {
		t.Errorf("closed %d times, want 1", p.closed)
	}
}
