package agenttypes_test

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

var findingsSchema = json.RawMessage(`{
	"type": "object",
	"required": ["findings"],
	"properties": {
		"findings": {
			"type": "array",
			"items": {
				"type": "object",
				"required": ["path", "line"],
				"properties": {"path": {"type": "string"}, "line": {"type": "integer", "minimum": 1}}
			}
		}
	}
}`)

func TestOutputValidate(t *testing.T) {
	ctx := t.Context()
	out := agenttypes.Output{Format: agenttypes.OutputJSON, Schema: findingsSchema}
	type finding struct {
		Path string `json:"path"`
		Line int    `json:"line"`
	}
	tests := []struct {
		name string
		v    any
		msg  string // "" for valid
	}{
		{"decoded JSON", map[string]any{"findings": []any{map[string]any{"path": "a.go", "line": float64(3)}}}, ""},
		{"a Go value", struct {
			Findings []finding `json:"findings"`
		}{[]finding{{"a.go", 3}}}, ""},
		{"raw JSON", json.RawMessage(`{"findings": []}`), ""},
		{"missing property", map[string]any{}, "at /: missing property 'findings'"},
		{"wrong type deep down", map[string]any{"findings": []any{map[string]any{"path": "a.go", "line": "three"}}}, "at /findings/0/line: got string, want integer"},
		{"below minimum", json.RawMessage(`{"findings": [{"path": "a.go", "line": 0}]}`), "at /findings/0/line: minimum: got 0, want 1"},
		{"not JSON at all", json.RawMessage(`{`), "unexpected EOF"},
		{"a value that cannot be JSON", func() {}, "cannot be written as JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := out.Validate(ctx, tt.v)
			if tt.msg == "" {
				assert.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, agenttypes.ErrBadOutput)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
	assert.NoError(t, agenttypes.Output{Format: agenttypes.OutputText, Schema: findingsSchema}.Validate(ctx, 42), "text output is not checked")
	assert.NoError(t, agenttypes.Output{Format: agenttypes.OutputJSON}.Validate(ctx, 42), "no schema, nothing to check")
	err := agenttypes.Output{Format: agenttypes.OutputJSON, Schema: json.RawMessage(`{"type": 5}`)}.Validate(ctx, 1)
	assert.ErrorIs(t, err, agenttypes.ErrInvalid)
}

func TestOutputParse(t *testing.T) {
	ctx := t.Context()
	out := agenttypes.Output{Format: agenttypes.OutputJSON, Schema: findingsSchema}
	v, err := out.Parse(ctx, "```json\n{\"findings\": [{\"path\": \"a.go\", \"line\": 12}]}\n```")
	require.NoError(t, err)
	assert.Equal(t, json.Number("12"), v.(map[string]any)["findings"].([]any)[0].(map[string]any)["line"], "numbers keep their precision")
	_, err = out.Parse(ctx, "I found it in a.go")
	require.ErrorIs(t, err, agenttypes.ErrBadOutput)
	assert.Contains(t, err.Error(), "not valid JSON")
	_, err = out.Parse(ctx, `{"findings": "none"}`)
	assert.ErrorIs(t, err, agenttypes.ErrBadOutput)
	text, err := agenttypes.Output{}.Parse(ctx, "plain")
	require.NoError(t, err)
	assert.Equal(t, "plain", text)
}

func TestSchemaRefsStayInside(t *testing.T) {
	ctx := t.Context()
	for _, ref := range []string{"file:///etc/passwd", "https://example.com/s.json", "other.json"} {
		typ := agenttypes.Type{Name: "a", Description: "d", Output: agenttypes.Output{Format: agenttypes.OutputJSON, Schema: json.RawMessage(`{"$ref": "` + ref + `"}`)}}
		err := typ.Validate()
		require.ErrorIs(t, err, agenttypes.ErrInvalid, ref)
		assert.Contains(t, err.Error(), "does not compile")
	}
	local := agenttypes.Type{Name: "a", Description: "d", Output: agenttypes.Output{Format: agenttypes.OutputJSON,
		Schema: json.RawMessage(`{"$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n"}`)}}
	require.NoError(t, local.Validate())
	assert.NoError(t, local.Output.Validate(ctx, 3))
	assert.ErrorIs(t, local.Output.Validate(ctx, "3"), agenttypes.ErrBadOutput)
}

func TestSchemaCacheConcurrent(t *testing.T) {
	ctx := t.Context()
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			out := agenttypes.Output{Format: agenttypes.OutputJSON, Schema: json.RawMessage(`{"type": "integer", "maximum": ` + string(rune('0'+i%4)) + `}`)}
			assert.NoError(t, out.Validate(ctx, 0))
			assert.ErrorIs(t, out.Validate(ctx, 10), agenttypes.ErrBadOutput)
		})
	}
	wg.Wait()
}

func TestValidateArgs(t *testing.T) {
	ctx := t.Context()
	params := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"max":{"type":"integer","minimum":1}},"required":["path"]}`)
	for _, tc := range []struct {
		name, params, args, want string
	}{
		{"fits", string(params), `{"path":"a","max":3}`, ""},
		{"wrong type", string(params), `{"path":12345}`, "at /path: got number, want string"},
		{"missing", string(params), `{"max":2}`, "missing property 'path'"},
		{"below minimum", string(params), `{"path":"a","max":0}`, "at /max"},
		{"not an object", string(params), `["a"]`, "must be a JSON object"},
		{"not JSON", string(params), `{"path":`, "not valid JSON"},
		{"no parameters, any object", "", `{"anything":1}`, ""},
		{"no arguments is an empty object", `{"type":"object","properties":{}}`, ``, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := agenttypes.ValidateArgs(ctx, json.RawMessage(tc.params), json.RawMessage(tc.args))
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
