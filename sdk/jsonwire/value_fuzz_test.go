package jsonwire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecode: Decode accepts exactly what encoding/json accepts, its encoding is a fixed point
// of decode and encode, EncodedSize is the encoding's length, and encoding/json reads the same
// value from the original and from the encoding.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5e3,"x\u2028",true,null]}`, `"\ud800"`, "\"\xff\"", `[{"a":1,"a":2}]`, `-0.0E+1`, ` [ ] `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Decode(data)
		if valid := json.Valid(data); (err == nil) != valid {
			t.Fatalf("Decode err %v, json.Valid %v for %q", err, valid, data)
		}
		if err != nil {
			return
		}
		enc := v.Encode()
		if v.EncodedSize() != len(enc) {
			t.Fatalf("EncodedSize %d, len %d", v.EncodedSize(), len(enc))
		}
		again, err := Decode(enc)
		if err != nil {
			t.Fatalf("the encoding does not decode: %v\n%q", err, enc)
		}
		if !bytes.Equal(again.Encode(), enc) {
			t.Fatalf("not a fixed point:\n%q\n%q", enc, again.Encode())
		}
		if !EqualValues(v, again) {
			t.Fatal("a value is not Equal to its own round trip")
		}
		var a, b any
		da := json.NewDecoder(bytes.NewReader(data))
		da.UseNumber()
		db := json.NewDecoder(bytes.NewReader(enc))
		db.UseNumber()
		if da.Decode(&a) != nil || db.Decode(&b) != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("encoding/json reads another value:\n%q\n%q", data, enc)
		}
	})
}
