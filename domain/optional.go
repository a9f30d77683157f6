package domain

import (
	"bytes"
	"encoding/json"
)

// Optional is a PATCH field: Set tells whether the request named it at all,
// Value is nil when it was set to null.
type Optional[T any] struct {
	Set   bool
	Value *T
}

func (o *Optional[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(b) == "null" {
		o.Value = nil
		return nil
	}
	// Strict like the request body around it: unknown nested fields are
	// refused, not ignored.
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var v T
	if err := dec.Decode(&v); err != nil {
		return err
	}
	o.Value = &v
	return nil
}

// Some returns a set Optional holding v.
func Some[T any](v T) Optional[T] { return Optional[T]{Set: true, Value: &v} }
