package wire

import (
	"math"

	"github.com/nexuskernel/nexus/sdk/announce"
	pb "github.com/nexuskernel/nexus/sdk/internal/pb/nexus/plugin/v1"
)

// AnnouncementToProto converts an announcement for the wire. Raw JSON travels as bytes
// verbatim; a nil environment or input schema travels as empty bytes.
func AnnouncementToProto(a announce.Announcement) *pb.Announcement {
	out := &pb.Announcement{EnvironmentJson: a.Environment}
	for _, t := range a.Tools {
		pt := &pb.ToolAnnouncement{Name: t.Name, Description: t.Description, InputSchemaJson: t.InputSchema}
		if t.TimeoutMS != nil {
			v := uint64(max(*t.TimeoutMS, 0)) // a negative timeout is sent as 0, which Validate refuses as well
			pt.TimeoutMs = &v
		}
		if p := t.EffectProfile; p != nil {
			pt.EffectProfile = &pb.EffectProfile{
				Kind: p.Kind, Destructive: p.Destructive, EffectScope: p.EffectScope,
				Idempotency: p.Idempotency, Reconciliation: p.Reconciliation,
			}
		}
		out.Tools = append(out.Tools, pt)
	}
	for _, d := range a.Documents {
		out.Documents = append(out.Documents, &pb.DocumentAnnouncement{Name: d.Name, Description: d.Description})
	}
	return out
}

// AnnouncementFromProto converts a peer's announcement. It keeps absence visible (a missing
// effect profile stays nil, an unset destructive stays nil) so that announce.ValidatePlugin
// refuses exactly what the HTTP door refuses; it never validates anything itself.
func AnnouncementFromProto(p *pb.Announcement) announce.Announcement {
	var a announce.Announcement
	if p == nil {
		return a
	}
	if len(p.GetEnvironmentJson()) > 0 {
		a.Environment = append([]byte(nil), p.GetEnvironmentJson()...)
	}
	for _, pt := range p.GetTools() {
		t := announce.Tool{Name: pt.GetName()}
		if pt.Description != nil {
			d := pt.GetDescription()
			t.Description = &d
		}
		if len(pt.GetInputSchemaJson()) > 0 {
			t.InputSchema = append([]byte(nil), pt.GetInputSchemaJson()...)
		}
		if pt.TimeoutMs != nil {
			// A value past int64 cannot be a valid timeout; keep it out of range so Validate
			// refuses it instead of wrapping to a negative number.
			v := int64(min(pt.GetTimeoutMs(), math.MaxInt64))
			t.TimeoutMS = &v
		}
		if pp := pt.GetEffectProfile(); pp != nil {
			prof := &announce.AnnouncedProfile{
				Kind: pp.GetKind(), EffectScope: pp.GetEffectScope(),
				Idempotency: pp.GetIdempotency(), Reconciliation: pp.GetReconciliation(),
			}
			if pp.Destructive != nil {
				d := pp.GetDestructive()
				prof.Destructive = &d
			}
			t.EffectProfile = prof
		}
		a.Tools = append(a.Tools, t)
	}
	for _, d := range p.GetDocuments() {
		a.Documents = append(a.Documents, announce.Document{Name: d.GetName(), Description: d.GetDescription()})
	}
	return a
}
