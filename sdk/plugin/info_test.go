package plugin_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/nexuskernel/nexus/sdk/plugin"
)

func TestConfigDecode(t *testing.T) {
	t.Parallel()
	type conf struct {
		Root  string `json:"root"`
		Fsync *bool  `json:"fsync"`
	}
	for _, c := range []struct {
		name    string
		raw     string
		want    conf
		invalid bool
	}{
		{"absent block", "", conf{}, false},
		{"empty object", "{}", conf{}, false},
		{"fields", `{"root":"/r","fsync":false}`, conf{Root: "/r", Fsync: new(bool)}, false},
		{"unknown field", `{"rot":"/r"}`, conf{}, true},
		{"not an object", `[1]`, conf{}, true},
		{"trailing data", `{} {}`, conf{}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var got conf
			err := plugin.Config{Raw: json.RawMessage(c.raw)}.Decode(&got)
			if c.invalid {
				if !errors.Is(err, plugin.ErrConfigInvalid) {
					t.Errorf("error %v, want ErrConfigInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Root != c.want.Root || (got.Fsync == nil) != (c.want.Fsync == nil) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}
