package runs

import (
	"context"
	"slices"
	"testing"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/store"
)

// TestAttachmentRefRendering: a media ref the gate admits is its attachment part; otherwise, and
// for any non-media input, its index line, a result's naming its source task, media's ending
// saying why. A model that reads no images turns a stored part of history into its index line.
func TestAttachmentRefRendering(t *testing.T) {
	t.Parallel()
	id := "01900000-0000-7000-8000-0000000000aa"
	img := inputRef(Attachment{PublicID: id, URI: "nexus://uploads/" + id, Filename: "page one.png", ContentType: "image/png; charset=binary", ByteSize: 4008, SHA256: "ab"})
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
	notes := inputRef(Attachment{PublicID: id, URI: "nexus://uploads/" + id, Filename: "notes.txt", ContentType: "text/plain", ByteSize: 5})
	e := &Engine{}
	g := e.newGate(nil, model.Model{})
	if p, err := g.render(context.Background(), notes); err != nil || p.Text != "[attachment notes.txt text/plain 5 bytes nexus://uploads/"+id+"]" {
		t.Fatalf("non-media input %+v %v", p, err)
	}
	// A stored part of an earlier turn's result media, for a model that reads no images.
	stored := res.part("")
	entries := []model.Entry{
		{Role: model.RoleUser, Content: []model.Part{{Type: model.PartText, Text: "Look."}}},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c", Name: "screenshot", Arguments: "{}"}}},
		{Role: model.RoleTool, ToolCallID: "c", Name: "screenshot", Content: []model.Part{{Type: model.PartText, Text: "Captured."}}},
		{Role: model.RoleUser, Content: []model.Part{stored}},
	}
	changed, err := e.rerenderTurn(context.Background(), nil, g, &store.Turn{InputAttachments: store.Attachments{}}, entries)
	want := "[attachment page one.png image/png 4008 bytes nexus://uploads/" + id + " from r2t0: not readable by this model]"
	if err != nil || !slices.Equal(changed, []bool{false, false, false, true}) || entries[3].Content[0].Text != want {
		t.Fatalf("changed %v, %+v, %v", changed, entries[3].Content, err)
	}
}
