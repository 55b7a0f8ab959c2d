package model

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

func TestEstimateBytesIsCanonicalJSON(t *testing.T) {
	t.Parallel()
	// Keys sorted, compact: the entry {"role":"user","content":[{"type":"text","text":"hi"}]}
	// measures as the canonical text below; no tools measure as [].
	entries := []Entry{user("hi")}
	canon := `[{"content":[{"text":"hi","type":"text"}],"role":"user"}]`
	got, err := EstimateBytes(entries, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(len(canon) + len(`[]`)); got != want {
		t.Errorf("EstimateBytes = %d, want %d", got, want)
	}
	tokens, err := EstimateTokens(entries, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (int64(len(canon)+2) + 3) / 4; tokens != want {
		t.Errorf("EstimateTokens = %d, want %d", tokens, want)
	}
}

func TestEstimateOfTheSealedExample(t *testing.T) {
	t.Parallel()
	rawEntries, rawTools := sealedExample(t)
	join := func(parts [][]byte) []byte {
		return append(append([]byte{'['}, bytes.Join(parts, []byte{','})...), ']')
	}
	var e, tl [][]byte
	for _, r := range rawEntries {
		e = append(e, r)
	}
	for _, r := range rawTools {
		tl = append(tl, r)
	}
	ce, err := jsonwire.CanonicalValue(join(e))
	if err != nil {
		t.Fatal(err)
	}
	ct, err := jsonwire.CanonicalValue(join(tl))
	if err != nil {
		t.Fatal(err)
	}
	got, err := EstimateBytes(exampleEntries, exampleTools)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(len(ce) + len(ct)); got != want {
		t.Errorf("EstimateBytes = %d, want %d (the canonical JSON of the example's own text)", got, want)
	}
	tokens, _ := EstimateTokens(exampleEntries, exampleTools)
	if tokens != (got+3)/4 {
		t.Errorf("tokens %d for %d bytes", tokens, got)
	}
}

func TestEstimateRefusesWhatCannotBeEncoded(t *testing.T) {
	t.Parallel()
	if _, err := EstimateTokens([]Entry{{Role: "robot"}}, nil); err == nil {
		t.Error("bad role estimated")
	}
	if _, err := EstimateTokens(nil, []ToolSchema{{Name: "t", Parameters: []byte("{")}}); err == nil {
		t.Error("bad parameters estimated")
	}
	if _, err := EstimateTokens(nil, []ToolSchema{{Name: "t", Parameters: []byte(`{"n":1e999}`)}}); err == nil {
		t.Error("an out-of-range number estimated")
	}
}

// TestEstimateMeasuresEntriesAsCanonical pins the shortcut EstimateBytes takes: for entries, the
// encoder's length is the canonical length, whatever the strings hold.
func TestEstimateMeasuresEntriesAsCanonical(t *testing.T) {
	t.Parallel()
	odd := []string{"", "plain", "<a & b>", "\u2028\u2029", "quote \" backslash \\ slash /", "\x00\x01\x1f\x7f",
		"tab\tnew\nline\rcr\bback\fform", "bad \xff\xfe utf8 \xc3", "émoji 😀 中文", `{"json":"inside"}`}
	var entries []Entry
	for _, s := range odd {
		entries = append(entries,
			Entry{Role: RoleUser, Content: []Part{text(s), {Type: PartAttachment, UploadPublicID: s, MediaType: s, Name: s,
				ByteSize: 9007199254740991, SHA256: s, SourceTask: s}}},
			Entry{Role: RoleAssistant, Content: []Part{text(s)}, ToolCalls: []ToolCall{{ID: s, Name: s, Arguments: s}}},
			Entry{Role: RoleTool, ToolCallID: s, Name: s, IsError: s == "", Content: []Part{text(s)}},
			Entry{Role: RoleSystem, Content: []Part{text(s)}},
		)
	}
	encoded, err := json.Marshal(entries)
	if err != nil {
		t.Fatal(err)
	}
	canon, err := jsonwire.CanonicalValue(encoded)
	if err != nil {
		t.Fatal(err)
	}
	got, err := EstimateBytes(entries, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(len(canon) + 2); got != want {
		t.Errorf("EstimateBytes = %d, canonical entries plus [] = %d", got, want)
	}
	// Tool parameters are canonicalized: whitespace and number spelling do not count.
	loose := []ToolSchema{{Name: "t", Parameters: []byte("{ \"b\" : 1.0 ,\n \"a\" : 1e2 }")}}
	tight := []ToolSchema{{Name: "t", Parameters: []byte(`{"a":100,"b":1}`)}}
	l, _ := EstimateBytes(nil, loose)
	r, _ := EstimateBytes(nil, tight)
	if l != r {
		t.Errorf("loose parameters measure %d, tight %d", l, r)
	}
}
