package jsonwire

// Kind is the JSON type of a Value.
type Kind uint8

const (
	// NullKind is JSON null, and the zero Value.
	NullKind Kind = iota
	BoolKind
	NumberKind
	StringKind
	ArrayKind
	ObjectKind
)

var kindNames = [...]string{"null", "boolean", "number", "string", "array", "object"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "invalid"
}

// Value is one JSON value. The zero Value is null. Values are immutable by convention: the
// methods that change something return a new Value and never write into the receiver's
// slices, so a Value may be shared freely.
type Value struct {
	kind Kind
	b    bool
	// s is a string's content or a number's literal text.
	s       string
	items   []Value
	members []Field
}

// Field is one key and value of an object, in document order.
type Field struct {
	Key   string
	Value Value
}

// Null returns JSON null.
func Null() Value { return Value{} }

// Bool returns true or false.
func Bool(b bool) Value { return Value{kind: BoolKind, b: b} }

// String returns a JSON string holding s.
func String(s string) Value { return Value{kind: StringKind, s: s} }

// Number returns the number whose literal is lit. ok is false when lit is not a JSON number.
func Number(lit string) (Value, bool) {
	if !ValidNumber([]byte(lit)) {
		return Value{}, false
	}
	return Value{kind: NumberKind, s: lit}, true
}

// Array returns an array of items. The slice becomes the Value's own.
func Array(items ...Value) Value {
	if items == nil {
		items = []Value{}
	}
	return Value{kind: ArrayKind, items: items}
}

// Object returns an object with members in the given order. The slice becomes the Value's own.
func Object(members ...Field) Value {
	if members == nil {
		members = []Field{}
	}
	return Value{kind: ObjectKind, members: members}
}

// M is shorthand for a Field.
func M(key string, v Value) Field { return Field{Key: key, Value: v} }

// Kind returns the JSON type.
func (v Value) Kind() Kind { return v.kind }

// IsNull reports whether v is null.
func (v Value) IsNull() bool { return v.kind == NullKind }

// IsObject reports whether v is an object.
func (v Value) IsObject() bool { return v.kind == ObjectKind }

// IsArray reports whether v is an array.
func (v Value) IsArray() bool { return v.kind == ArrayKind }

// AsString returns a string's content.
func (v Value) AsString() (string, bool) { return v.s, v.kind == StringKind }

// AsBool returns a boolean's value.
func (v Value) AsBool() (bool, bool) { return v.b, v.kind == BoolKind }

// NumberText returns a number's literal text.
func (v Value) NumberText() (string, bool) { return v.s, v.kind == NumberKind }

// Items returns an array's elements. The slice is shared: do not modify it.
func (v Value) Items() []Value { return v.items }

// Members returns an object's members in order. The slice is shared: do not modify it.
func (v Value) Members() []Field { return v.members }

// Len is the number of elements of an array or members of an object.
func (v Value) Len() int {
	switch v.kind {
	case ArrayKind:
		return len(v.items)
	case ObjectKind:
		return len(v.members)
	}
	return 0
}

// Get returns the value of the first member named key.
func (v Value) Get(key string) (Value, bool) {
	for i := range v.members {
		if v.members[i].Key == key {
			return v.members[i].Value, true
		}
	}
	return Value{}, false
}

// Has reports whether an object has a member named key.
func (v Value) Has(key string) bool {
	_, ok := v.Get(key)
	return ok
}

// GetString returns the member key when it is a string.
func (v Value) GetString(key string) (string, bool) {
	m, ok := v.Get(key)
	if !ok {
		return "", false
	}
	return m.AsString()
}

// Keys lists an object's keys in order.
func (v Value) Keys() []string {
	out := make([]string, len(v.members))
	for i, m := range v.members {
		out[i] = m.Key
	}
	return out
}

// Set returns a copy of the object with key set to val: replaced in place when present,
// appended last otherwise.
func (v Value) Set(key string, val Value) Value {
	out := make([]Field, len(v.members), len(v.members)+1)
	copy(out, v.members)
	for i := range out {
		if out[i].Key == key {
			out[i].Value = val
			return Value{kind: ObjectKind, members: out}
		}
	}
	return Value{kind: ObjectKind, members: append(out, Field{key, val})}
}

// Without returns a copy of the object without the members named by keys.
func (v Value) Without(keys ...string) Value {
	out := make([]Field, 0, len(v.members))
next:
	for _, m := range v.members {
		for _, k := range keys {
			if m.Key == k {
				continue next
			}
		}
		out = append(out, m)
	}
	return Value{kind: ObjectKind, members: out}
}

// HasDuplicateKeys reports whether any object inside v, at any depth, repeats a key.
func (v Value) HasDuplicateKeys() bool {
	switch v.kind {
	case ArrayKind:
		for _, it := range v.items {
			if it.HasDuplicateKeys() {
				return true
			}
		}
	case ObjectKind:
		if repeatsKey(v.members) {
			return true
		}
		for _, m := range v.members {
			if m.Value.HasDuplicateKeys() {
				return true
			}
		}
	}
	return false
}

// repeatsKeyLinear is the member count below which a pairwise scan beats building a set.
const repeatsKeyLinear = 12

func repeatsKey(ms []Field) bool {
	if len(ms) < repeatsKeyLinear {
		for i := 1; i < len(ms); i++ {
			for j := 0; j < i; j++ {
				if ms[i].Key == ms[j].Key {
					return true
				}
			}
		}
		return false
	}
	seen := make(map[string]struct{}, len(ms))
	for _, m := range ms {
		if _, dup := seen[m.Key]; dup {
			return true
		}
		seen[m.Key] = struct{}{}
	}
	return false
}
