package jsonschema_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes/internal/jsonschema"
)

func compile(t *testing.T, schema string) (*jsonschema.Schema, error) {
	t.Helper()
	doc, err := jsonschema.Unmarshal(strings.NewReader(schema))
	require.NoError(t, err)
	return jsonschema.Compile(doc, "mem:///s.json")
}

// A countingMeter records the depth of each step and adds up the work.
type countingMeter struct {
	depths []int
	work   int
}

func (m *countingMeter) Step(depth int) { m.depths = append(m.depths, depth) }
func (m *countingMeter) Work(units int) { m.work += units }

func check(t *testing.T, s *jsonschema.Schema, value string) error {
	t.Helper()
	v, err := jsonschema.Unmarshal(strings.NewReader(value))
	require.NoError(t, err)
	return s.Validate(v, &countingMeter{})
}

// Each draft's own rules apply, by the schema's $schema.
func TestDraftsKeepTheirOwnRules(t *testing.T) {
	tests := []struct {
		name, schema, value, msg string // msg "" for valid
	}{
		{"draft 4's exclusiveMaximum is a flag", `{"$schema": "http://json-schema.org/draft-04/schema#", "maximum": 3, "exclusiveMaximum": true}`, `3`, "exclusiveMaximum: got 3, want 3"},
		{"draft 4's id names a resource", `{"$schema": "http://json-schema.org/draft-04/schema#", "definitions": {"a": {"id": "a.json", "type": "integer"}}, "$ref": "a.json"}`, `"x"`, "got string, want integer"},
		{"draft 7 ignores what stands beside a $ref", `{"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"n": {"type": "integer"}}, "$ref": "#/definitions/n", "minimum": 10}`, `3`, ""},
		{"2020-12 applies it", `{"$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n", "minimum": 10}`, `3`, "minimum: got 3, want 10"},
		{"draft 7's items array and additionalItems", `{"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}], "additionalItems": false}`, `["a", 1]`, "last 1 additionalItem(s) not allowed"},
		{"draft 7's dependencies", `{"$schema": "http://json-schema.org/draft-07/schema#", "dependencies": {"a": ["b"]}}`, `{"a": 1}`, "properties 'b' required, if 'a' exists"},
		{"2019-09's $recursiveRef follows the outermost anchor", `{"$schema": "https://json-schema.org/draft/2019-09/schema", "$id": "https://example.com/tree", "$recursiveAnchor": true,
			"$ref": "https://example.com/base", "properties": {"x": {"type": "integer"}},
			"$defs": {"base": {"$id": "https://example.com/base", "$recursiveAnchor": true, "properties": {"kid": {"$recursiveRef": "#"}}}}}`, `{"kid": {"x": "no"}}`, "at /kid/x: got string, want integer"},
		{"format annotates and asserts nothing", `{"$schema": "http://json-schema.org/draft-07/schema#", "format": "email"}`, `"not an address"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := compile(t, tt.schema)
			require.NoError(t, err)
			err = check(t, s, tt.value)
			if tt.msg == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestCompileRefusesWhatCannotBeChecked(t *testing.T) {
	for _, tt := range []struct{ schema, msg string }{
		{`{"$ref": "other.json"}`, "names another document"},
		{`{"$ref": "https://json-schema.org/draft/2020-12/schema"}`, "names another document"},
		{`{"$ref": "#nowhere"}`, "names no anchor"},
		{`{"$ref": "#/$defs/missing"}`, "names nothing in the schema"},
		{`{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}`, "refers back to itself without going into a part of the value"},
		{`{"not": {"$ref": "#"}}`, "refers back to itself"},
		{`{"$schema": "http://example.com/my-meta"}`, "names no draft"},
		{`{"type": "objekt"}`, "at /type: 'objekt' is not a JSON type"},
		{`{"properties": {"a": 5}}`, "at /properties: 'a': got number, want a schema"},
		{`{"required": ["a", "a"]}`, "at /required: got array, want an array of distinct names"},
		{`{"minLength": -1}`, "at /minLength: got number, want a non-negative integer"},
		{`{"pattern": "("}`, "is not a regular expression"},
		{`{"pattern": "` + strings.Repeat(`\\p{L}{1000}`, 6) + `"}`, "compiles to 6002 instructions, over the limit of 5,000; use a simpler pattern"},
		{`{"patternProperties": {"` + strings.Repeat(`\\p{L}{1000}`, 6) + `": {}}}`, "at /patternProperties: '"},
		{`{"multipleOf": 0}`, "want a number above 0"},
	} {
		_, err := compile(t, tt.schema)
		require.Error(t, err, tt.schema)
		assert.Contains(t, err.Error(), tt.msg, tt.schema)
	}
	_, err := compile(t, `{"$defs": {"n": {"items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"}`)
	assert.NoError(t, err, "a reference back that goes into the value is recursion, not a loop")
}

func TestEveryEvaluationIsReportedToTheMeter(t *testing.T) {
	s, err := compile(t, `{"$defs": {"n": {"anyOf": [{"type": "array", "items": {"$ref": "#/$defs/n"}}, {"type": "string"}]}}, "$ref": "#/$defs/n"}`)
	require.NoError(t, err)
	v, err := jsonschema.Unmarshal(strings.NewReader(`[["a"], "b"]`))
	require.NoError(t, err)
	m := &countingMeter{}
	require.NoError(t, s.Validate(v, m))
	assert.Contains(t, m.depths, 2, "the innermost string is evaluated at depth 2")
	assert.Greater(t, len(m.depths), 6)
}

func TestNestingPastTheLimitIsAnError(t *testing.T) {
	s, err := compile(t, `{"items": {"$ref": "#"}}`)
	require.NoError(t, err)
	deep := strings.Repeat("[", 6000) + strings.Repeat("]", 6000)
	err = check(t, s, deep)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nest too deeply to check")
	assert.NoError(t, check(t, s, strings.Repeat("[", 100)+strings.Repeat("]", 100)))
}

func TestUnmarshalKeepsNumbersAndRefusesTrailingData(t *testing.T) {
	v, err := jsonschema.Unmarshal(strings.NewReader(`{"n": 12345678901234567890}`))
	require.NoError(t, err)
	assert.Equal(t, "12345678901234567890", string(v.(map[string]any)["n"].(interface{ String() string }).String()))
	_, err = jsonschema.Unmarshal(strings.NewReader(`{} {}`))
	assert.Error(t, err)
}

// A Go value that is no JSON value (a caller's struct inside a map)
// fails to match, and never panics.
func TestValuesThatAreNotJSONDoNotPanic(t *testing.T) {
	s, err := compile(t, `{"enum": [[1]], "uniqueItems": true}`)
	require.NoError(t, err)
	type pair struct{ a []int }
	v := []any{pair{[]int{1}}, pair{[]int{1}}}
	assert.NotPanics(t, func() { assert.Error(t, s.Validate(v, &countingMeter{})) })
}

// Draft 4 takes a boolean as the value of additionalProperties and
// additionalItems, and nowhere else.
func TestDraft4TakesABooleanForAdditionalPropertiesAndItems(t *testing.T) {
	const draft4 = `"$schema": "http://json-schema.org/draft-04/schema#"`
	props, err := compile(t, `{`+draft4+`, "type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false}`)
	require.NoError(t, err)
	assert.NoError(t, check(t, props, `{"a": "x"}`))
	err = check(t, props, `{"a": "x", "b": 1}`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "additional properties 'b' not allowed")

	items, err := compile(t, `{`+draft4+`, "items": [{"type": "string"}], "additionalItems": false}`)
	require.NoError(t, err)
	assert.NoError(t, check(t, items, `["a"]`))
	err = check(t, items, `["a", 1]`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "last 1 additionalItem(s) not allowed")

	for _, schema := range []string{
		`{` + draft4 + `, "not": false}`,
		`{` + draft4 + `, "properties": {"additionalProperties": false}}`,
		`{` + draft4 + `, "items": true}`,
	} {
		_, err := compile(t, schema)
		require.Error(t, err, schema)
		assert.Contains(t, err.Error(), "want a schema (an object)", schema)
	}
}

// Numbers are compared exactly, whatever their exponents, without being
// built: 1e999999 is an integer, above every ordinary number.
func TestNumbersWithHugeExponentsKeepTheirMeaning(t *testing.T) {
	tests := []struct {
		schema, value, msg string // msg "" for valid
	}{
		{`{"type": "integer", "minimum": 0}`, `1e999999`, ""},
		{`{"type": "integer"}`, `1.5e999999`, ""},
		{`{"type": "integer"}`, `1e-999999`, "got number, want integer"},
		{`{"maximum": 10}`, `1e999999`, "maximum: got 1e999999, want 10"},
		{`{"minimum": 0}`, `-1e999999`, "minimum: got -1e999999, want 0"},
		{`{"exclusiveMinimum": 0}`, `1e-999999`, ""},
		{`{"exclusiveMaximum": 1e999999}`, `1e999999`, "exclusiveMaximum"},
		{`{"minimum": 1e999998}`, `1e999999`, ""},
		{`{"multipleOf": 7}`, `7e999999`, ""},
		{`{"multipleOf": 7}`, `1e999999`, "multipleOf: got 1e999999, want 7"},
		{`{"multipleOf": 1e999998}`, `1e999999`, ""},
		{`{"multipleOf": 1e999999}`, `1e999998`, "multipleOf"},
		{`{"multipleOf": 0.01}`, `19.99`, ""},
		{`{"multipleOf": 0.01}`, `19.999`, "multipleOf"},
		{`{"multipleOf": 0.3}`, `0.9`, ""},
		{`{"multipleOf": 4}`, `6`, "multipleOf"},
		{`{"multipleOf": 4}`, `123456789012345678901234567890123456789012345678901234567890`, "multipleOf"},
		{`{"multipleOf": 4}`, `123456789012345678901234567890123456789012345678901234567892`, ""},
		{`{"const": 1}`, `1.0e0`, ""},
		{`{"enum": [100, "a"]}`, `1e2`, ""},
		{`{"const": {"a": [1, {"b": null}], "c": 2}}`, `{"c": 2.0, "a": [1, {"b": null}]}`, ""},
		{`{"const": {"a": 1}}`, `{"a": 1, "b": 1}`, "'const' failed"},
		{`{"type": "integer"}`, `1e1000000000000000`, "its exponent has more than 15 digits, so it cannot be checked"},
		{`{"type": "number"}`, `1e1000000000000000`, ""},
		{`{"minimum": 1e1000000000000000}`, `1`, "schema"},
	}
	for _, tt := range tests {
		t.Run(tt.schema+" "+tt.value, func(t *testing.T) {
			s, err := compile(t, tt.schema)
			if tt.msg == "schema" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "at /minimum: the number 1e1000000000000000: its exponent has more than 15 digits")
				return
			}
			require.NoError(t, err)
			err = check(t, s, tt.value)
			if tt.msg == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

// A message quotes at most 100 characters of a value, and lists at most
// ten names.
func TestMessagesCutLongValuesShort(t *testing.T) {
	s, err := compile(t, `{"properties": {"s": {"pattern": "^b"}}, "additionalProperties": false}`)
	require.NoError(t, err)
	keys := make([]string, 30)
	for i := range keys {
		keys[i] = fmt.Sprintf(`"k%02d": 0`, i)
	}
	err = check(t, s, `{"s": "`+strings.Repeat("é", 100_000)+`", `+strings.Join(keys, ", ")+`}`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "at /s: '"+strings.Repeat("é", 100)+"…' does not match pattern '^b'")
	assert.Contains(t, err.Error(), "additional properties 'k00', 'k01', 'k02', 'k03', 'k04', 'k05', 'k06', 'k07', 'k08', 'k09', and 20 more not allowed")
	assert.Less(t, len(err.Error()), 1000)
}

// Matching a pattern is charged in proportion to the text's length times
// the size of the pattern's program, before it is matched.
func TestMatchingAPatternIsChargedByTheTextAndTheProgram(t *testing.T) {
	s, err := compile(t, `{"pattern": "\\p{L}{1000}x"}`)
	require.NoError(t, err)
	v := strings.Repeat("a", 10_000)
	m := &countingMeter{}
	require.Error(t, s.Validate(v, m))
	assert.GreaterOrEqual(t, m.work, 10_000*1000/4)
}
