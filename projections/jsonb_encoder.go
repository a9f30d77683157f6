package projections

import (
	"encoding"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// appendJSONB writes v as jsonbText does (the text PostgreSQL prints for
// json.Marshal(v) as jsonb), but straight from the value: each type's
// fields are ordered once, as jsonb orders keys, instead of every value
// being marshalled and then parsed again to reorder it. That round trip
// was most of the public events replay's Go time (a fifth of the
// machine). What this encoder does not know exactly — floats,
// json.Number, marshalers other than a value's own MarshalJSON, embedded
// or conflicting fields, invalid UTF-8 — goes the old way for that value
// (marshal, then rewrite), so the bytes are the same whatever the input
// (TestJSONBEncoderMatchesTheRewrite).
func appendJSONB(b *strings.Builder, v any) error {
	if v == nil {
		b.WriteString("null")
		return nil
	}
	return encoderOf(reflect.TypeOf(v))(b, reflect.ValueOf(v))
}

type jsonbEncoderFunc func(b *strings.Builder, v reflect.Value) error

var jsonbEncoders sync.Map // reflect.Type → jsonbEncoderFunc

// encoderOf returns t's encoder, building it once. A type that refers to
// itself gets, while it is being built, a stand-in that waits for it (as
// encoding/json does).
func encoderOf(t reflect.Type) jsonbEncoderFunc {
	if f, ok := jsonbEncoders.Load(t); ok {
		return f.(jsonbEncoderFunc)
	}
	var (
		wg sync.WaitGroup
		f  jsonbEncoderFunc
	)
	wg.Add(1)
	stand, loaded := jsonbEncoders.LoadOrStore(t, jsonbEncoderFunc(func(b *strings.Builder, v reflect.Value) error {
		wg.Wait()
		return f(b, v)
	}))
	if loaded {
		return stand.(jsonbEncoderFunc)
	}
	f = newJSONBEncoder(t)
	wg.Done()
	jsonbEncoders.Store(t, f)
	return f
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	jsonNumber    = reflect.TypeFor[json.Number]()
)

func newJSONBEncoder(t reflect.Type) jsonbEncoderFunc {
	switch k := t.Kind(); {
	case k == reflect.Interface:
	case k == reflect.Pointer:
		// A marshaler with a pointer receiver: encoding/json calls it.
		if t.Implements(jsonMarshaler) && !t.Elem().Implements(jsonMarshaler) ||
			t.Implements(textMarshaler) && !t.Elem().Implements(textMarshaler) {
			return rewriteEncoder
		}
	case t.Implements(jsonMarshaler):
		return marshalerEncoder
	case t == jsonNumber || t.Implements(textMarshaler):
		return rewriteEncoder
	case reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler):
		// encoding/json calls these where the value is addressable.
		return func(b *strings.Builder, v reflect.Value) error {
			if v.CanAddr() {
				v = v.Addr()
			}
			return rewriteEncoder(b, v)
		}
	}
	switch t.Kind() {
	case reflect.String:
		return stringEncoder
	case reflect.Bool:
		return func(b *strings.Builder, v reflect.Value) error {
			b.WriteString(strconv.FormatBool(v.Bool()))
			return nil
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(b *strings.Builder, v reflect.Value) error {
			var room [20]byte
			b.Write(strconv.AppendInt(room[:0], v.Int(), 10))
			return nil
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return func(b *strings.Builder, v reflect.Value) error {
			var room [20]byte
			b.Write(strconv.AppendUint(room[:0], v.Uint(), 10))
			return nil
		}
	case reflect.Interface:
		return func(b *strings.Builder, v reflect.Value) error {
			if v.IsNil() {
				b.WriteString("null")
				return nil
			}
			e := v.Elem()
			return encoderOf(e.Type())(b, e)
		}
	case reflect.Pointer:
		elem := encoderOf(t.Elem())
		return func(b *strings.Builder, v reflect.Value) error {
			if v.IsNil() {
				b.WriteString("null")
				return nil
			}
			return elem(b, v.Elem())
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return rewriteEncoder // base64
		}
		elems := arrayEncoder(t)
		return func(b *strings.Builder, v reflect.Value) error {
			if v.IsNil() {
				b.WriteString("null")
				return nil
			}
			return elems(b, v)
		}
	case reflect.Array:
		return arrayEncoder(t)
	case reflect.Map:
		if t.Key() != reflect.TypeFor[string]() {
			return rewriteEncoder // named or non-string keys: encoding/json's rules
		}
		return mapEncoder(t)
	case reflect.Struct:
		return structEncoder(t)
	}
	return rewriteEncoder // floats, and kinds encoding/json refuses (its error comes back)
}

// rewriteEncoder is the old way: encoding/json, then reordered.
func rewriteEncoder(b *strings.Builder, v reflect.Value) error {
	raw, err := json.Marshal(v.Interface())
	if err != nil {
		return err
	}
	return rewrite(b, raw)
}

// marshalerEncoder writes a value's own MarshalJSON output, reordered.
func marshalerEncoder(b *strings.Builder, v reflect.Value) error {
	raw, err := v.Interface().(json.Marshaler).MarshalJSON()
	if err != nil {
		return err
	}
	if len(raw) > 0 && raw[0] == '"' {
		if s, rest, err := readString(raw); err == nil && len(rest) == 0 && utf8.Valid(s) {
			writeJSONBString(b, s) // a timestamp, say: nothing to reorder
			return nil
		}
	}
	return rewriteEncoder(b, v)
}

func rewrite(b *strings.Builder, raw []byte) error {
	rest, err := writeJSONB(b, raw)
	if err == nil && len(rest) != 0 {
		return errors.New("jsonb text: trailing bytes")
	}
	return err
}

func stringEncoder(b *strings.Builder, v reflect.Value) error {
	s := v.String()
	if !utf8.ValidString(s) {
		return rewriteEncoder(b, v) // encoding/json replaces each bad byte
	}
	writeJSONBString(b, []byte(s))
	return nil
}

func arrayEncoder(t reflect.Type) jsonbEncoderFunc {
	elem := encoderOf(t.Elem())
	return func(b *strings.Builder, v reflect.Value) error {
		b.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := elem(b, v.Index(i)); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	}
}

func mapEncoder(t reflect.Type) jsonbEncoderFunc {
	elem := encoderOf(t.Elem())
	return func(b *strings.Builder, v reflect.Value) error {
		if v.IsNil() {
			b.WriteString("null")
			return nil
		}
		type member struct {
			key   string
			value reflect.Value
		}
		members := make([]member, 0, v.Len())
		iter := v.MapRange()
		for iter.Next() {
			k := iter.Key().String()
			if !utf8.ValidString(k) {
				return rewriteEncoder(b, v) // two bad keys may become one
			}
			members = append(members, member{k, iter.Value()})
		}
		slices.SortFunc(members, func(a, c member) int { return jsonbKeyCompare(a.key, c.key) })
		b.WriteByte('{')
		for i, m := range members {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJSONBString(b, []byte(m.key))
			b.WriteString(": ")
			if err := elem(b, m.value); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	}
}

// jsonbKeyCompare orders keys as jsonb does: by length, then bytes.
func jsonbKeyCompare(a, c string) int {
	if len(a) != len(c) {
		return len(a) - len(c)
	}
	return strings.Compare(a, c)
}

type jsonbField struct {
	index     int
	name      string
	key       string // name written quoted, with ": " after it
	omitEmpty bool
	encode    jsonbEncoderFunc
}

// structEncoder writes a struct's fields in jsonb's key order, worked out
// once per type. Embedded fields, tag options other than omitempty, and
// names two fields share follow encoding/json's rules of promotion and
// conflict, which this does not redo: those types go the old way.
func structEncoder(t reflect.Type) jsonbEncoderFunc {
	var fields []jsonbField
	seen := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return rewriteEncoder
		}
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		omit := false
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "":
			case "omitempty":
				omit = true
			default:
				return rewriteEncoder // string, omitzero, …
			}
		}
		if seen[name] || !utf8.ValidString(name) || !validTagName(name) {
			return rewriteEncoder
		}
		seen[name] = true
		var key strings.Builder
		writeJSONBString(&key, []byte(name))
		key.WriteString(": ")
		fields = append(fields, jsonbField{index: i, name: name, key: key.String(), omitEmpty: omit, encode: encoderOf(f.Type)})
	}
	slices.SortFunc(fields, func(a, c jsonbField) int { return jsonbKeyCompare(a.name, c.name) })
	return func(b *strings.Builder, v reflect.Value) error {
		b.WriteByte('{')
		first := true
		for _, f := range fields {
			fv := v.Field(f.index)
			if f.omitEmpty && isEmptyValue(fv) {
				continue
			}
			if !first {
				b.WriteString(", ")
			}
			first = false
			b.WriteString(f.key)
			if err := f.encode(b, fv); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	}
}

// validTagName is encoding/json's test of a tag's name (for others it
// uses the Go field's name).
func validTagName(s string) bool {
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return s != ""
}

// isEmptyValue is encoding/json's omitempty test.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}
