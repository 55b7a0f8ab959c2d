package runs

import (
	"context"
	"slices"
	"testing"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/store"
)

// TestRerenderTurn: a model that reads no images turns a stored attachment part of an earlier
// turn's result media into its index line, and leaves every other entry's bytes alone.
func TestRerenderTurn(t *testing.T) {
	t.Parallel()
	id := "01900000-0000-7000-8000-0000000000aa"
	stored := model.Part{Type: model.PartAttachment, UploadPublicID: id, MediaType: "image/png", Name: "page one.png", ByteSize: 4008,
		SHA256: "ab", SourceTask: "r2t0"}
	e := &Engine{}
	g := e.uploads.Gate(nil, model.Model{})
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
