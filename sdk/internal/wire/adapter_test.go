package wire

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/nexuskernel/nexus/sdk/plugin"
)

func TestSlotBeforeAndAfterConfigure(t *testing.T) {
	t.Parallel()
	var s Slot[*int]
	if _, err := s.Get(); !errors.Is(err, ErrNotConfigured) {
		t.Fatalf("empty slot answered %v", err)
	}
	n := 7
	s.Set(&n)
	if p, err := s.Get(); err != nil || *p != 7 {
		t.Fatalf("set slot answered %v, %v", p, err)
	}
}

func TestAdapterRequiresConfigure(t *testing.T) {
	t.Parallel()
	for _, a := range []*Adapter[*int]{
		{Kind: plugin.KindMemory},
		{Kind: plugin.KindToolProvider, Served: &Served[*int]{}},
	} {
		err := a.GRPCServer(nil, grpc.NewServer())
		if err == nil || !strings.HasPrefix(err.Error(), string(a.Kind)+": ") {
			t.Errorf("%s without Configure: %v", a.Kind, err)
		}
	}
}
