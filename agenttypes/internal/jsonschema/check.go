package jsonschema

import (
	"encoding/json"
	"fmt"
	"slices"
)

// A SchemaError says where a schema breaks its draft's rules.
type SchemaError struct {
	// Ptr is the JSON pointer of the keyword at fault.
	Ptr string
	Msg string
}

func (e *SchemaError) Error() string { return "at " + where(e.Ptr) + ": " + e.Msg }

// Keywords by the shape of their values.
var (
	schemaKeywords = []string{"not", "if", "then", "else", "additionalItems", "contains", "additionalProperties",
		"propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema"}
	schemaListKeywords = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	schemaMapKeywords  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
	countKeywords      = []string{"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minContains", "maxContains"}
	stringKeywords     = []string{"pattern", "$ref", "$anchor", "$dynamicAnchor", "$dynamicRef", "$recursiveRef", "$schema",
		"$comment", "format", "title", "description", "contentMediaType", "contentEncoding", "$id"}
	boolKeywords = []string{"uniqueItems", "$recursiveAnchor", "readOnly", "writeOnly", "deprecated"}
	jsonTypes    = []string{"array", "boolean", "integer", "null", "number", "object", "string"}
)

// checkShape reports the first keyword of the schema v (at ptr) whose
// value is not of the shape its draft gives it. Unknown keywords are
// left alone.
func checkShape(v any, ptr string, draft int) error {
	m, ok := v.(map[string]any)
	if !ok {
		if _, ok := v.(bool); ok && draft >= Draft6 {
			return nil
		}
		return &SchemaError{ptr, fmt.Sprintf("got %s, want a schema (an object%s)", typeOf(v), map[bool]string{true: " or a boolean"}[draft >= Draft6])}
	}
	// bad says the value of kw is not what it wants; or, with no want,
	// what the message says.
	bad := func(kw, want string, msg ...any) error {
		if want == "" {
			return &SchemaError{ptr + "/" + EscapeToken(kw), fmt.Sprintf(msg[0].(string), msg[1:]...)}
		}
		return &SchemaError{ptr + "/" + EscapeToken(kw), fmt.Sprintf("got %s, want %s", typeOf(m[kw]), want)}
	}
	for kw, val := range m {
		if err := checkKeyword(kw, val, draft, bad); err != nil {
			return err
		}
	}
	if n := numberOf(m["multipleOf"]); n != nil && n.d.sign() <= 0 {
		return &SchemaError{ptr + "/multipleOf", "want a number above 0"}
	}
	var err error
	ForSubschemas(m, ptr, true, func(sub any, p string) {
		if _, isBool := sub.(bool); isBool && draft < Draft6 && (p == ptr+"/additionalProperties" || p == ptr+"/additionalItems") {
			return // the two places draft 4 takes a boolean
		}
		if err == nil {
			err = checkShape(sub, p, draft)
		}
	})
	if err != nil {
		return err
	}
	if d, ok := m["dependencies"].(map[string]any); ok {
		for k, dv := range d {
			if _, isList := dv.([]any); !isList && !isSchema(dv) {
				return &SchemaError{ptr + "/dependencies/" + EscapeToken(k), fmt.Sprintf("got %s, want a schema or an array of names", typeOf(dv))}
			}
		}
	}
	return nil
}

func checkKeyword(kw string, val any, draft int, bad func(kw, want string, msg ...any) error) error {
	switch {
	case slices.Contains(schemaKeywords, kw):
		if !isSchema(val) {
			return bad(kw, "a schema")
		}
	case kw == "items":
		if !isSchema(val) && (draft >= Draft2020 || !isList(val)) {
			return bad(kw, "a schema")
		}
	case slices.Contains(schemaListKeywords, kw):
		if l, ok := val.([]any); !ok || len(l) == 0 {
			return bad(kw, "a non-empty array of schemas")
		}
	case slices.Contains(schemaMapKeywords, kw), kw == "dependencies", kw == "dependentRequired", kw == "$vocabulary":
		if _, ok := val.(map[string]any); !ok {
			return bad(kw, "an object")
		}
		if slices.Contains(schemaMapKeywords, kw) {
			for k, sub := range val.(map[string]any) {
				if !isSchema(sub) {
					return bad(kw, "", "%s: got %s, want a schema", quote(k), typeOf(sub))
				}
			}
		}
		if kw == "dependentRequired" {
			for _, names := range val.(map[string]any) {
				if !isNames(names) {
					return bad(kw, "an object of arrays of distinct names")
				}
			}
		}
	case slices.Contains(countKeywords, kw):
		if intOf(val) < 0 {
			return bad(kw, "a non-negative integer")
		}
	case kw == "minimum" || kw == "maximum" || kw == "multipleOf":
		return checkNumber(kw, val, bad)
	case kw == "exclusiveMinimum" || kw == "exclusiveMaximum":
		if _, ok := val.(bool); draft == Draft4 && !ok {
			return bad(kw, "a boolean")
		} else if draft > Draft4 {
			return checkNumber(kw, val, bad)
		}
	case slices.Contains(stringKeywords, kw) || (kw == "id" && draft == Draft4):
		if _, ok := val.(string); !ok {
			return bad(kw, "a string")
		}
	case slices.Contains(boolKeywords, kw):
		if _, ok := val.(bool); !ok {
			return bad(kw, "a boolean")
		}
	case kw == "required":
		if !isNames(val) {
			return bad(kw, "an array of distinct names")
		}
	case kw == "enum" || kw == "examples":
		if _, ok := val.([]any); !ok {
			return bad(kw, "an array")
		}
	case kw == "type":
		return checkType(val, bad)
	}
	return nil
}

func checkNumber(kw string, val any, bad func(kw, want string, msg ...any) error) error {
	if numberOf(val) != nil {
		return nil
	}
	if text, ok := val.(json.Number); ok {
		if _, err := parseDecimal(string(text)); err != nil {
			return bad(kw, "", "the number %s: %v", cut(string(text)), err)
		}
	}
	return bad(kw, "a number")
}

func checkType(val any, bad func(kw, want string, msg ...any) error) error {
	const names = "array, boolean, integer, null, number, object or string"
	switch t := val.(type) {
	case string:
		if !slices.Contains(jsonTypes, t) {
			return bad("type", "", "%s is not a JSON type: use %s", quote(t), names)
		}
	case []any:
		if !isNames(t) {
			return bad("type", "an array of distinct type names")
		}
		for _, s := range t {
			if !slices.Contains(jsonTypes, s.(string)) {
				return bad("type", "", "%s is not a JSON type: use %s", quote(s.(string)), names)
			}
		}
	default:
		return bad("type", "a type name ("+names+") or an array of them")
	}
	return nil
}

// isNames reports whether v is an array of distinct strings.
func isNames(v any) bool {
	l, ok := v.([]any)
	if !ok {
		return false
	}
	seen := map[string]bool{}
	for _, s := range l {
		s, ok := s.(string)
		if !ok || seen[s] {
			return false
		}
		seen[s] = true
	}
	return true
}

// typeOf names the JSON type of v as messages do: every number is a
// number.
func typeOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case json.Number, float64, float32, int, int64, int32, uint, uint64:
		return "number"
	}
	return fmt.Sprintf("%T", v)
}
