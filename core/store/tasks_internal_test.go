package store

import (
	"reflect"
	"slices"
	"testing"
)

// dbTags lists the db tags of a struct type's fields in order, those of an embedded struct in
// its place.
func dbTags(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			out = append(out, dbTags(f.Type)...)
			continue
		}
		out = append(out, f.Tag.Get("db"))
	}
	return out
}

// TestTaskColumnsAreTheRowTypes: the trace's columns are exactly TaskTrace's fields, and a whole
// row's every column is exactly Task's, so that no read fills half a row type.
func TestTaskColumnsAreTheRowTypes(t *testing.T) {
	sorted := func(s []string) []string {
		s = slices.Clone(s)
		slices.Sort(s)
		return s
	}
	if got, want := sorted(dbTags(reflect.TypeOf(TaskTrace{}))), sorted(traceColumns); !slices.Equal(got, want) {
		t.Errorf("TaskTrace's columns\n%v\nthe trace's\n%v", got, want)
	}
	if got, want := sorted(dbTags(reflect.TypeOf(Task{}))), sorted(taskColumns); !slices.Equal(got, want) {
		t.Errorf("Task's columns\n%v\ntaskColumns\n%v", got, want)
	}
}
