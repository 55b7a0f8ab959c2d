package envelope

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestKeysAreTheResultKeys holds the request type the doors embed equal to the keys Validate
// reads, so that a door's strict decoding refuses exactly the keys the grammar does not know.
func TestKeysAreTheResultKeys(t *testing.T) {
	t.Parallel()
	var tags []string
	kt := reflect.TypeFor[Keys]()
	for i := 0; i < kt.NumField(); i++ {
		name, _, _ := strings.Cut(kt.Field(i).Tag.Get("json"), ",")
		tags = append(tags, name)
	}
	if !slices.Equal(tags, resultKeys) {
		t.Fatalf("Keys has %v, Validate reads %v", tags, resultKeys)
	}
}
