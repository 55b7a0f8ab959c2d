package declare

import (
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Set is a compiled declaration in its stored form: every entry rendered with the set's
// spellings, sorted by callable name bytewise. A nil *Set is the empty set. A Set is immutable.
type Set struct {
	entries []entry
}

// Len is the number of entries.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.entries)
}

// Entries returns the entries in stored order. The slice is the caller's own.
func (s *Set) Entries() []Entry {
	out := make([]Entry, s.Len())
	for i := range out {
		out[i] = s.entries[i].public()
	}
	return out
}

// Callables lists the callable names in stored order.
func (s *Set) Callables() []string {
	out := make([]string, s.Len())
	for i := range out {
		out[i] = s.entries[i].name
	}
	return out
}

// Lookup finds the entry whose callable is name.
func (s *Set) Lookup(name string) (Entry, bool) {
	if e := s.find(name); e != nil {
		return e.public(), true
	}
	return Entry{}, false
}

func (s *Set) find(name string) *entry {
	if s == nil {
		return nil
	}
	// Sorted by name, so a binary search finds it.
	lo, hi := 0, len(s.entries)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if s.entries[mid].name < name {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(s.entries) && s.entries[lo].name == name {
		return &s.entries[lo]
	}
	return nil
}

// Value returns the stored form as one JSON array.
func (s *Set) Value() jsonwire.Value {
	items := make([]jsonwire.Value, s.Len())
	for i := range items {
		items[i] = s.entries[i].value
	}
	return jsonwire.Array(items...)
}

// Bytes is the stored form: the compact encoding of the sorted, rendered entries; "[]" when
// empty.
func (s *Set) Bytes() []byte {
	buf := make([]byte, 0, 64*s.Len()+2)
	buf = append(buf, '[')
	for i := 0; i < s.Len(); i++ {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = s.entries[i].value.Append(buf)
	}
	return append(buf, ']')
}

// EncodedSize is len(Bytes()), measured without building it.
func (s *Set) EncodedSize() int {
	n := 2
	if s.Len() > 1 {
		n += s.Len() - 1
	}
	for i := 0; i < s.Len(); i++ {
		n += s.entries[i].value.EncodedSize()
	}
	return n
}

// MarshalJSON writes the stored form. Use an Encoder with SetEscapeHTML(false) to keep it
// byte-exact.
func (s *Set) MarshalJSON() ([]byte, error) { return s.Bytes(), nil }

// Spelling is the set's spelling of a kernel tool (docs/development.md#the-declaration-compiler):
// its wire name when the set declares it under that name, else the bytewise-smallest alias name. ok
// is false when no entry of the set denotes the tool; the texts then spell it as its wire name.
func (s *Set) Spelling(canonical string) (name string, ok bool) {
	for i := 0; i < s.Len(); i++ {
		e := &s.entries[i]
		if e.tool == nil || e.tool.entry.Canonical != canonical {
			continue
		}
		if e.name == e.tool.entry.Wire {
			return e.name, true
		}
		if !ok || e.name < name {
			name, ok = e.name, true
		}
	}
	return name, ok
}
