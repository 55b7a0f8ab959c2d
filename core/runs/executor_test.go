package runs

import (
	"context"
	"testing"

	"github.com/nexuskernel/nexus/core/model"
)

// TestIndexLineGrammar pins the index lines rerenderMedia reads back: a result's (with its source
// task) and an input's, of media the model cannot read; lines of non-media inputs, and text that
// merely looks like one, are left alone.
func TestIndexLineGrammar(t *testing.T) {
	t.Parallel()
	id := "01900000-0000-7000-8000-0000000000aa"
	for line, want := range map[string][]string{
		"[attachment page one.png image/png 4008 bytes nexus://uploads/" + id + " from r2t0: not readable by this model]": {"page one.png", "image/png", "4008", id, "r2t0"},
		"[attachment scan.pdf application/pdf 12 bytes nexus://uploads/" + id + ": not readable by this model]":           {"scan.pdf", "application/pdf", "12", id, ""},
	} {
		g := indexLine.FindStringSubmatch(line)
		if g == nil || g[1] != want[0] || g[2] != want[1] || g[3] != want[2] || g[4] != want[3] || g[6] != want[4] || g[7] == "" {
			t.Fatalf("%s: %q", line, g)
		}
	}
	// Without uploads nothing is turned back into a part, and a non-media input line has no
	// "not readable" tail to act on.
	e := &Engine{}
	en := model.Entry{Role: model.RoleUser, Content: []model.Part{{Type: model.PartText, Text: "[attachment notes.txt text/plain 5 bytes nexus://uploads/" + id + "]"}}}
	if _, changed, err := e.rerenderMedia(context.Background(), nil, e.newGate(nil, model.Model{}), en); changed || err != nil {
		t.Fatalf("changed %v %v", changed, err)
	}
	// An attachment part for a model that reads no images becomes its index line.
	part := model.Entry{Role: model.RoleUser, Content: []model.Part{{Type: model.PartAttachment, UploadPublicID: id, MediaType: "image/png",
		Name: "page.png", ByteSize: 7, SHA256: "x", SourceTask: "r2t0"}}}
	got, changed, err := e.rerenderMedia(context.Background(), nil, e.newGate(nil, model.Model{}), part)
	want := "[attachment page.png image/png 7 bytes nexus://uploads/" + id + " from r2t0: not readable by this model]"
	if err != nil || !changed || got.Content[0].Type != model.PartText || got.Content[0].Text != want {
		t.Fatalf("%+v %v %v", got, changed, err)
	}
}
