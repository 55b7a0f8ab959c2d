package uploads

import (
	"context"
	"testing"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/store"
)

// TestRefRendering: a media ref the gate admits is its attachment part; otherwise, and for any
// non-media input, its index line, a result's naming its source task, media's ending saying why.
func TestRefRendering(t *testing.T) {
	t.Parallel()
	id := "01900000-0000-7000-8000-0000000000aa"
	img := InputRef(store.Attachment{PublicID: id, URI: "nexus://uploads/" + id, Filename: "page one.png", ContentType: "image/png; charset=binary", ByteSize: 4008, SHA256: "ab"})
	if p := img.part(""); p.Type != model.PartAttachment || p.UploadPublicID != id || p.MediaType != "image/png" || p.Name != "page one.png" ||
		p.ByteSize != 4008 || p.SHA256 != "ab" || p.SourceTask != "" {
		t.Fatalf("admitted %+v", p)
	}
	if p := img.part(endTooLarge); p.Type != model.PartText || p.Text != "[attachment page one.png image/png 4008 bytes nexus://uploads/"+id+": too large for this model]" {
		t.Fatalf("too large %+v", p)
	}
	res := img
	res.source = "r2t0"
	if p := res.part(endUnreadable); p.Text != "[attachment page one.png image/png 4008 bytes nexus://uploads/"+id+" from r2t0: not readable by this model]" {
		t.Fatalf("result %+v", p)
	}
	if back := PartRef(res.part("")); back != res {
		t.Fatalf("a stored part's ref %+v, want %+v", back, res)
	}
	notes := InputRef(store.Attachment{PublicID: id, URI: "nexus://uploads/" + id, Filename: "notes.txt", ContentType: "text/plain", ByteSize: 5})
	var s *Service
	g := s.Gate(nil, model.Model{})
	if p, err := g.Render(context.Background(), notes); err != nil || p.Text != "[attachment notes.txt text/plain 5 bytes nexus://uploads/"+id+"]" {
		t.Fatalf("non-media input %+v %v", p, err)
	}
}
