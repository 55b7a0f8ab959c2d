package runs

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/nexuskernel/nexus/core/steps"
)

// FuzzCheckCall: the pairing law never panics, and a call it lets through carries one JSON
// object within the bound; a refused call carries a known key and a bounded detail.
func FuzzCheckCall(f *testing.F) {
	for _, s := range []string{`{"path":"a"}`, ``, `[1,2]`, `{"path":`, `{"a":"\u0000"}`, `{"n":1e999}`, `{"s":"\ud800"}`, `null`} {
		f.Add("read_file", s, true, false)
	}
	f.Fuzz(func(t *testing.T, name, args string, declared, truncated bool) {
		v := CheckCall(name, args, declared, truncated)
		if v.Error == nil {
			if !json.Valid(v.Input) || !bytes.HasPrefix(bytes.TrimSpace(v.Input), []byte("{")) {
				t.Fatalf("let through %q as %q", args, v.Input)
			}
			return
		}
		switch v.Error.Key {
		case KeyUnknownTool, KeyInvalidToolArguments, KeyTruncatedToolArguments, KeyToolInputTooLarge, KeyInvalidToolInput:
		default:
			t.Fatalf("unknown key %q", v.Error.Key)
		}
		if v.Error.Key == KeyInvalidToolArguments && len(v.Error.Detail) > ArgumentsDetailBytes {
			t.Fatalf("detail of %d bytes", len(v.Error.Detail))
		}
		if utf8.ValidString(name) && utf8.RuneCountInString(v.ToolName) > steps.MaxToolNameLen {
			t.Fatalf("tool name of %d characters", utf8.RuneCountInString(v.ToolName))
		}
	})
}
