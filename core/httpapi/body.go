package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// errNotObject is the answer to a body that is valid JSON but not an object (docs/api.md).
var errNotObject = refusal.New(refusal.BadRequest, refusal.CodeParameterInvalid, "The request body must be a JSON object.")

// fieldWord is how a door refuses a field it does not know: with the word its other field
// refusals use, so that a client reads one vocabulary per door (docs/api.md, "Exact body
// fields").
type fieldWord struct {
	kind refusal.Kind
	code string
	// word, when set, is carried as the refusal's word (a door whose validation_failed
	// refusals name a finer word).
	word string
	// ownText is set for the doors whose service judges the storability of its text itself,
	// with finer words (the memory doors' memory_path_invalid and memory_content_invalid); every
	// other door's body passes the one storability check (storable).
	ownText bool
}

var (
	// wordParameter is the word of doors whose field refusals are 400 parameter_invalid.
	wordParameter = fieldWord{kind: refusal.BadRequest, code: refusal.CodeParameterInvalid}
	// wordValidation is the word of doors whose field refusals are 422 validation_failed.
	wordValidation = fieldWord{kind: refusal.Unprocessable, code: refusal.CodeValidationFailed}
	// wordMemory is wordParameter for the memory doors, which judge their text themselves.
	wordMemory = fieldWord{kind: refusal.BadRequest, code: refusal.CodeParameterInvalid, ownText: true}
)

// storable is the one storability check of a door's body (docs/api.md, "Request bodies: exact
// fields"): the first value at or under path in raw that the store cannot keep (a string with
// U+0000, a lone surrogate or bytes that are not UTF-8, or a number beyond the double range,
// jsonwire.UnstorablePath) is refused 422 validation_failed at its path, before anything acts.
// PostgreSQL refuses such text in every column and SQLite would keep it and hand it on (to a
// model, say), so no door lets it through.
func storable(raw []byte, path string, word fieldWord) error {
	if word.ownText {
		return nil
	}
	bad := jsonwire.UnstorablePath(raw)
	if bad == "" {
		return nil
	}
	at := strings.TrimPrefix(strings.TrimPrefix(bad, "$"), ".")
	switch {
	case path == "":
	case at == "" || at[0] == '[':
		at = path + at
	default:
		at = path + "." + at
	}
	return refusal.Newf(refusal.Unprocessable, refusal.CodeValidationFailed,
		"%s cannot be stored: text must be UTF-8 without U+0000 or a lone surrogate, and a number within the double range.", at).With("path", at)
}

// decodeBody is the one strict decoding of a JSON request body, which every door that reads a
// body calls before anything acts. dst is a pointer to the door's request struct; its json
// tags are the only keys the body may carry, at every level of nested structs (and of slices
// of them). Fields of another type (json.RawMessage, maps, scalars) are the values their own
// rules judge.
//
// An empty body is an absent one: present is false and dst is untouched. Otherwise, in order:
// a body that is not JSON is 400 parameter_invalid naming the byte offset where it stops being
// JSON; one that is JSON but not an object 400 parameter_invalid; a key the request does not
// know is refused with the door's word and the key's path (keys match exactly, case included:
// encoding/json alone would take "Expires_At" for "expires_at"); a value of the wrong type for
// a typed field is 422 validation_failed at its path.
func decodeBody(c *Call, word fieldWord, dst any) (present bool, err error) {
	return decodeExact(c.Body, word, dst)
}

// decodeRequired is decodeBody for a body whose root key is required: after the body's shape,
// and before its keys, a body without root (or with a null one) is refused missing, or 400
// parameter_missing at root when missing is nil. A client that forgot the wrapper hears of the
// wrapper, not of the fields it put at the top.
func decodeRequired(c *Call, word fieldWord, root string, missing error, dst any) error {
	if missing == nil {
		missing = requireRoot(false, root, true)
	}
	if len(bytes.TrimSpace(c.Body)) == 0 {
		return missing
	}
	members, err := jsonwire.SplitObject(c.Body)
	if err != nil {
		return malformed(c.Body, err)
	}
	if v, ok := members.Get(root); !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return missing
	}
	return decodeMembers(c.Body, members, "", word, dst)
}

// bodyMembers is decodeBody for a door that reads its body's members itself (the commit and
// resolution doors, whose result the envelope reads from them): the body's shape and keys are
// checked exactly as decodeBody checks them, against the json tags of keys, and the members are
// answered without a second pass over the body. An empty body has no members.
func bodyMembers(c *Call, word fieldWord, keys any) (jsonwire.Members, error) {
	if len(bytes.TrimSpace(c.Body)) == 0 {
		return nil, nil
	}
	members, err := jsonwire.SplitObject(c.Body)
	if err != nil {
		return nil, malformed(c.Body, err)
	}
	if err := schemaOf(reflect.TypeOf(keys)).checkMembers(members, "", word); err != nil {
		return nil, err
	}
	return members, nil
}

// lastMember is the value of the last member named key, the one encoding/json decodes a
// repeated key to.
func lastMember(members jsonwire.Members, key string) (json.RawMessage, bool) {
	for i := len(members) - 1; i >= 0; i-- {
		if members[i].Key == key {
			return members[i].Raw, true
		}
	}
	return nil, false
}

func decodeExact(body []byte, word fieldWord, dst any) (bool, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return false, nil
	}
	members, err := jsonwire.SplitObject(body)
	if err != nil {
		return true, malformed(body, err)
	}
	return true, decodeMembers(body, members, "", word, dst)
}

// decodeObjectAt is decodeBody for a value inside a body that a door holds as raw JSON (the
// memory doors' "memory", say) and decodes once it has judged its type: when raw is an object,
// its keys are checked against dst at path and it is decoded into dst, and isObject is true; a
// value of any other type is left to the door, untouched.
func decodeObjectAt(raw json.RawMessage, path string, word fieldWord, dst any) (isObject bool, err error) {
	if first(raw) != '{' {
		return false, nil
	}
	members, err := jsonwire.SplitObject(raw)
	if err != nil {
		return false, nil
	}
	return true, decodeMembers(raw, members, path, word, dst)
}

// decodeMembers checks an object's keys against dst at path, then decodes it into dst.
func decodeMembers(raw []byte, members jsonwire.Members, path string, word fieldWord, dst any) error {
	if err := schemaOf(reflect.TypeOf(dst)).checkMembers(members, path, word); err != nil {
		return err
	}
	if err := storable(raw, path, word); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			at := te.Field
			if path != "" {
				at = path + "." + at
			}
			return refusal.Newf(refusal.Unprocessable, refusal.CodeValidationFailed, "%s has the wrong type.", at).With("path", at)
		}
		return errNotObject
	}
	return nil
}

// malformed turns a failed split of the body into its refusal: valid JSON that is not an object,
// or the byte offset where the body stops being JSON.
func malformed(body []byte, err error) error {
	if c := first(body); c != '{' && c != 0 {
		_, serr := jsonwire.Scan(body)
		if serr == nil {
			return errNotObject
		}
		err = serr
	}
	var se *jsonwire.SyntaxError
	if errors.As(err, &se) {
		return refusal.Newf(refusal.BadRequest, refusal.CodeParameterInvalid,
			"The request body is not valid JSON: it breaks off or goes wrong at byte %d.", se.Offset)
	}
	return refusal.New(refusal.BadRequest, refusal.CodeParameterInvalid, "The request body is not valid JSON.")
}

// schema is the key set a request type allows: an object's fields by key (a nil schema for a
// value judged elsewhere), or an array's element.
type schema struct {
	// keys lists the object's keys in declaration order, for the refusal's sentence; fields
	// maps each to the schema of its value. Both are nil for a non-object.
	keys   []string
	fields map[string]*schema
	// elem is the element schema of an array of objects.
	elem *schema
}

var (
	schemas   sync.Map // reflect.Type -> *schema
	unmarshal = reflect.TypeFor[json.Unmarshaler]()
)

// schemaOf derives (once per type) the keys a request type allows. A type that decodes itself
// (json.RawMessage, any json.Unmarshaler), a map, an interface or a scalar allows anything:
// its own rules judge it.
func schemaOf(t reflect.Type) *schema {
	if s, ok := schemas.Load(t); ok {
		return s.(*schema)
	}
	s := buildSchema(t)
	schemas.Store(t, s)
	return s
}

func buildSchema(t reflect.Type) *schema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(unmarshal) || reflect.PointerTo(t).Implements(unmarshal) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		s := &schema{fields: map[string]*schema{}}
		addFields(s, t)
		return s
	case reflect.Slice, reflect.Array:
		if el := buildSchema(t.Elem()); el != nil {
			return &schema{elem: el}
		}
	}
	return nil
}

// addFields adds a struct's keys as encoding/json names them, embedded structs flattened.
func addFields(s *schema, t reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				addFields(s, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := s.fields[name]; !dup {
			s.keys = append(s.keys, name)
		}
		s.fields[name] = buildSchema(f.Type)
	}
}

// check walks a value against the schema: an object's keys, an array's elements. A value of
// another JSON type than the schema expects is left to the decoder's type check.
func (s *schema) check(raw json.RawMessage, path string, word fieldWord) error {
	if s == nil {
		return nil
	}
	switch first(raw) {
	case '{':
		if s.fields == nil {
			return nil
		}
		members, err := jsonwire.SplitObject(raw)
		if err != nil {
			return nil
		}
		return s.checkMembers(members, path, word)
	case '[':
		if s.elem == nil {
			return nil
		}
		items, err := jsonwire.SplitArray(raw)
		if err != nil {
			return nil
		}
		for i, it := range items {
			if err := s.elem.check(it, fmt.Sprintf("%s[%d]", path, i), word); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkMembers refuses the first key, in document order, that the object's schema lacks, and
// walks the values of the keys it has.
func (s *schema) checkMembers(members jsonwire.Members, path string, word fieldWord) error {
	if s == nil || s.fields == nil {
		return nil
	}
	for _, m := range members {
		p := m.Key
		if path != "" {
			p = path + "." + m.Key
		}
		sub, known := s.fields[m.Key]
		if !known {
			return s.unknown(p, word)
		}
		if err := sub.check(m.Raw, p, word); err != nil {
			return err
		}
	}
	return nil
}

func (s *schema) unknown(path string, word fieldWord) error {
	known := "none"
	if len(s.keys) > 0 {
		known = strings.Join(s.keys, ", ")
	}
	r := refusal.Newf(word.kind, word.code, "%s is not a field of this request (the fields here: %s).", path, known).With("path", path)
	if word.word != "" {
		r = r.With("word", word.word)
	}
	return r
}

func first(raw []byte) byte {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c
	}
	return 0
}

// requireRoot is the check for a body whose root key is required: absent (or null) is 400
// parameter_missing at that key.
func requireRoot(present bool, root string, isNil bool) error {
	if !present || isNil {
		return refusal.Newf(refusal.BadRequest, refusal.CodeParameterMissing, "The body must carry %q.", root).With("path", root)
	}
	return nil
}

// noFields is the request type of a door that takes no fields: its body is empty or {}.
type noFields struct{}
