package jsonschema

import (
	"encoding/binary"
	"maps"
	"slices"
)

// appendKey appends to b a key of the JSON value v: two values have the
// same key exactly when they are equal as JSON values (numbers by value,
// objects whatever the order of their keys). It stops with ok false when
// v is no JSON value, which is equal to nothing, or when the key grows
// past limit bytes (limit < 0 for none). A number that cannot be checked
// (errHugeExponent) is keyed by its text.
//
// Writing a key costs time linear in v's size, plus sorting each
// object's keys; equal values are then found by looking keys up, not by
// comparing every pair.
func appendKey(b []byte, v any, limit int) (key []byte, ok bool) {
	if limit >= 0 && len(b) > limit {
		return b, false
	}
	switch x := v.(type) {
	case nil:
		return append(b, 'z'), true
	case bool:
		if x {
			return append(b, 't'), true
		}
		return append(b, 'f'), true
	case string:
		b = binary.AppendUvarint(append(b, 's'), uint64(len(x)))
		return append(b, x...), true
	case []any:
		b = binary.AppendUvarint(append(b, '['), uint64(len(x)))
		for _, item := range x {
			if b, ok = appendKey(b, item, limit); !ok {
				return b, false
			}
		}
		return b, true
	case map[string]any:
		if limit >= 0 && len(b)+2*len(x) > limit {
			return b, false // each key costs at least two bytes: sorting them all would be for nothing
		}
		b = binary.AppendUvarint(append(b, '{'), uint64(len(x)))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			b = append(binary.AppendUvarint(b, uint64(len(k))), k...)
			if b, ok = appendKey(b, x[k], limit); !ok {
				return b, false
			}
		}
		return b, true
	}
	d, isNum, err := decimalOf(v)
	switch {
	case !isNum:
		return b, false
	case err != nil:
		s, _ := v.(interface{ String() string })
		b = append(b, 'N')
		if s != nil {
			b = append(b, s.String()...)
		}
		return append(b, 0), true
	}
	return append(d.appendCanonical(append(b, 'n')), 0), true
}

// keyOf is v's key as a string, for maps of keys.
func keyOf(v any, limit int) (string, bool) {
	b, ok := appendKey(nil, v, limit)
	return string(b), ok
}
