package jsonschema

import (
	"encoding/json"
	"errors"
	"io"
)

// Unmarshal reads one JSON value from r, with its numbers as json.Number
// so that they keep their precision. Anything after the value is an
// error.
func Unmarshal(r io.Reader) (any, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("invalid character after top-level value")
	}
	return v, nil
}
