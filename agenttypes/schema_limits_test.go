package agenttypes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

// doublingSchema is k levels of anyOf, each $ref-ing the level below twice,
// over an integer: 2+2·(1+…) subschemas, 2^(k+2)-2 in all with the root.
// ref names level i in the schema's own terms.
func doublingSchema(k int, ref func(i int) string) string {
	var b strings.Builder
	b.WriteString(`{"$id": "https://example.com/root.json", "$defs": {`)
	for i := range k {
		fmt.Fprintf(&b, `"l%d": {"$anchor": "a%d", "anyOf": [{"$ref": %q}, {"$ref": %q}]}, `, i, i, ref(i+1), ref(i+1))
	}
	fmt.Fprintf(&b, `"l%d": {"$anchor": "a%d", "type": "integer"}}, "$ref": %q}`, k, k, ref(0))
	return b.String()
}

func pointerRef(i int) string { return fmt.Sprintf("#/$defs/l%d", i) }

func TestSchemaThatExpandsPastTheLimitIsRefusedAtLoad(t *testing.T) {
	forty := doublingSchema(40, pointerRef)
	require.Less(t, len(forty), 4096, "a few kilobytes")

	typ := agenttypes.Type{Name: "a", Description: "d", Output: agenttypes.Output{Format: agenttypes.OutputJSON, Schema: json.RawMessage(forty)}}
	err := typ.Validate()
	require.ErrorIs(t, err, agenttypes.ErrInvalid)
	assert.Contains(t, err.Error(), "expands to 4,398,046,511,102 subschemas", "2^42-2, counted without expanding")
	assert.Contains(t, err.Error(), "over the limit of 10,000")
	assert.Contains(t, err.Error(), "simplify the schema: fewer nested anyOf/oneOf, or fewer $refs to large definitions")

	def := "name: deep\ndescription: d\noutput:\n  format: json\n  schema: " + forty + "\n"
	_, diags := agenttypes.ParseDefinition("agents/deep.yaml", []byte(def), agenttypes.LoadOptions{})
	require.True(t, diags.HasErrors(), "a definition carrying it does not load")
	assert.Contains(t, diags.String(), "output.schema is not a usable JSON schema: it expands to 4,398,046,511,102 subschemas")

	// 11 levels expand to 8,190 subschemas and load; 12 to 16,382.
	under := doublingSchema(11, pointerRef)
	_, diags = agenttypes.ParseDefinition("agents/under.yaml", []byte("name: under\ndescription: d\noutput:\n  format: json\n  schema: "+under+"\n"), agenttypes.LoadOptions{})
	require.False(t, diags.HasErrors(), diags.String())
	out := agenttypes.Output{Format: agenttypes.OutputJSON, Schema: json.RawMessage(under)}
	assert.NoError(t, out.Validate(t.Context(), 3))
	assert.ErrorIs(t, out.Validate(t.Context(), "3"), agenttypes.ErrBadOutput)

	over := agenttypes.Type{Name: "a", Description: "d", Output: agenttypes.Output{Format: agenttypes.OutputJSON, Schema: json.RawMessage(doublingSchema(12, pointerRef))}}
	err = over.Validate()
	require.ErrorIs(t, err, agenttypes.ErrInvalid)
	assert.Contains(t, err.Error(), "expands to 16,382 subschemas")
}

func TestSchemaSizeFollowsEveryFormOfLocalRef(t *testing.T) {
	forms := map[string]func(int) string{
		"pointer":          pointerRef,
		"escaped pointer":  func(i int) string { return fmt.Sprintf("#/%%24defs/l%d", i) },
		"anchor":           func(i int) string { return fmt.Sprintf("#a%d", i) },
		"relative to $id":  func(i int) string { return fmt.Sprintf("root.json#/$defs/l%d", i) },
		"absolute $id":     func(i int) string { return fmt.Sprintf("https://example.com/root.json#a%d", i) },
		"pointer from $id": func(i int) string { return fmt.Sprintf("/root.json#/$defs/l%d", i) },
	}
	for name, ref := range forms {
		t.Run(name, func(t *testing.T) {
			typ := agenttypes.Type{Name: "a", Description: "d", Output: agenttypes.Output{Format: agenttypes.OutputJSON, Schema: json.RawMessage(doublingSchema(12, ref))}}
			err := typ.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), "expands to 16,382 subschemas")
		})
	}
	// ~1 and ~0 in a pointer name a definition with / or ~ in its name.
	var b strings.Builder
	b.WriteString(`{"$defs": {`)
	for i := range 12 {
		fmt.Fprintf(&b, `"l/%d~": {"anyOf": [{"$ref": "#/$defs/l~1%d~0"}, {"$ref": "#/$defs/l~1%d~0"}]}, `, i, i+1, i+1)
	}
	b.WriteString(`"l/12~": {"type": "integer"}}, "$ref": "#/$defs/l~10~0"}`)
	typ := agenttypes.Type{Name: "a", Description: "d", Output: agenttypes.Output{Format: agenttypes.OutputJSON, Schema: json.RawMessage(b.String())}}
	err := typ.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "expands to 16,382 subschemas")
}

// jsonValue is any JSON value, a recursive schema that refers back to
// itself from two places; tree is a tree of sections.
const (
	jsonValue = `{"$defs": {"v": {"anyOf": [
		{"type": ["null", "boolean", "number", "string"]},
		{"type": "array", "items": {"$ref": "#/$defs/v"}},
		{"type": "object", "additionalProperties": {"$ref": "#/$defs/v"}}]}},
		"$ref": "#/$defs/v"}`
	tree = `{"type": "object", "required": ["title"], "properties": {
		"title": {"type": "string"},
		"left": {"$ref": "#"}, "right": {"$ref": "#"},
		"children": {"type": "array", "items": {"$ref": "#"}}}}`
)

func TestRecursiveSchemasLoad(t *testing.T) {
	for name, schema := range map[string]string{"JSON value": jsonValue, "tree": tree} {
		t.Run(name, func(t *testing.T) {
			typ := agenttypes.Type{Name: "a", Description: "d", Output: agenttypes.Output{Format: agenttypes.OutputJSON, Schema: json.RawMessage(schema)}}
			require.NoError(t, typ.Validate(), "a $ref back into a schema it is inside counts once")
		})
	}
	out := agenttypes.Output{Format: agenttypes.OutputJSON, Schema: json.RawMessage(tree)}
	deep := `{"title": "x"}`
	for range 200 {
		deep = `{"title": "x", "left": ` + deep + `, "children": [{"title": "y"}]}`
	}
	_, err := out.Parse(t.Context(), deep)
	assert.NoError(t, err, "a deep answer to a recursive schema checks in time linear in its size")
}

// explosive passes the load-time rule (its recursion counts once) but
// checks each level of an answer's nesting twice: an array of arrays 40
// deep with a number at the bottom matches neither branch at any level,
// after 2^40 tries.
const (
	explosiveDefs = `"$defs": {"n": {"anyOf": [
		{"type": "array", "items": {"$ref": "#/$defs/n"}},
		{"type": "array", "items": {"$ref": "#/$defs/n"}},
		{"type": "string"}]}}`
	explosive = `{` + explosiveDefs + `, "$ref": "#/$defs/n"}`
	// explosiveParams is a tool's parameters with an explosive argument a.
	explosiveParams = `{"type": "object", ` + explosiveDefs + `, "properties": {"a": {"$ref": "#/$defs/n"}}}`
)

var explosiveAnswer = strings.Repeat("[", 40) + "1" + strings.Repeat("]", 40)

// lookingCtx counts how often the validator looks at it. Its first look
// is before checking starts, so by the third it is inside the validator:
// then it closes reached, and from then on reports err if that is set.
type lookingCtx struct {
	context.Context
	looks   atomic.Int32
	reached chan struct{}
	err     error
}

func newLookingCtx(parent context.Context, err error) *lookingCtx {
	return &lookingCtx{Context: parent, reached: make(chan struct{}), err: err}
}

func (c *lookingCtx) Err() error {
	n := c.looks.Add(1)
	if n == 3 {
		close(c.reached)
	}
	if c.err != nil && n >= 3 {
		return c.err
	}
	return c.Context.Err()
}

// returnsWithin runs f and fails the test if it has not returned after a
// minute: a guard against a hang, not a measure of speed.
func returnsWithin[T any](t *testing.T, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(time.Minute):
		t.Fatal("still checking after a minute")
		panic("unreachable")
	}
}

func TestCheckingStopsWhenTheContextIsCancelled(t *testing.T) {
	typ := agenttypes.Type{Name: "a", Description: "d", Output: agenttypes.Output{Format: agenttypes.OutputJSON, Schema: json.RawMessage(explosive)}}
	require.NoError(t, typ.Validate())
	parent, cancel := context.WithCancel(t.Context())
	ctx := newLookingCtx(parent, nil)
	go func() {
		<-ctx.reached
		cancel()
	}()
	err := returnsWithin(t, func() error { _, err := typ.Output.Parse(ctx, explosiveAnswer); return err })
	require.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, agenttypes.ErrBadOutput, "a cancelled run is not a bad answer")

	parent, cancel = context.WithCancel(t.Context())
	ctx = newLookingCtx(parent, nil)
	go func() {
		<-ctx.reached
		cancel()
	}()
	err = returnsWithin(t, func() error {
		return agenttypes.ValidateArgs(ctx, json.RawMessage(explosiveParams), json.RawMessage(`{"a": `+explosiveAnswer+`}`))
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "checking the arguments against the tool's parameters stopped")
}

func TestCheckingStopsAtTheDeadline(t *testing.T) {
	out := agenttypes.Output{Format: agenttypes.OutputJSON, Schema: json.RawMessage(explosive)}
	ctx := newLookingCtx(t.Context(), context.DeadlineExceeded) // the deadline passes while checking
	err := returnsWithin(t, func() error { _, err := out.Parse(ctx, explosiveAnswer); return err })
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NotErrorIs(t, err, agenttypes.ErrBadOutput, "a run out of time is not a bad answer")

	ended, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = out.Parse(ended, `"fine"`)
	assert.ErrorIs(t, err, context.Canceled, "a context already ended stops even a cheap check")
}

func TestCheckingStopsWhenItsWorkRunsOut(t *testing.T) {
	out := agenttypes.Output{Format: agenttypes.OutputJSON, Schema: json.RawMessage(explosive)}
	err := returnsWithin(t, func() error { _, err := out.Parse(t.Context(), explosiveAnswer); return err })
	require.ErrorIs(t, err, agenttypes.ErrBadOutput)
	assert.Contains(t, err.Error(), "the answer took too long to check against the schema")

	err = returnsWithin(t, func() error {
		return agenttypes.ValidateArgs(t.Context(), json.RawMessage(explosiveParams), json.RawMessage(`{"a": `+explosiveAnswer+`}`))
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the arguments took too long to check against the tool's parameters")

	// The same schema checks a shallow answer as usual.
	v, err := out.Parse(t.Context(), `[["a", "b"], []]`)
	require.NoError(t, err)
	assert.Len(t, v, 2)
	_, err = out.Parse(t.Context(), `[[1]]`)
	require.ErrorIs(t, err, agenttypes.ErrBadOutput)
	assert.NotContains(t, err.Error(), "too long")
}

// Where the validator asks only "valid or not" (under not and if, and the
// oneOf branches after the first match) a subschema that fails a keyword
// skips the extensions the meter lives in. These schemas branch there
// without anyOf (whose schema object would reach its extension): several
// patternProperties match one name, or items and contains both check one
// item. They are metered all the same.
func TestCheckingUnderNotIfAndOneOfIsMetered(t *testing.T) {
	const (
		patterns   = `"$defs": {"x": {"type": "object", "patternProperties": {"a": {"$ref": "#/$defs/x"}, "^a": {"$ref": "#/$defs/x"}}}}`
		itemsTwice = `"$defs": {"x": {"type": "array", "items": {"$ref": "#/$defs/x"}, "contains": {"$ref": "#/$defs/x"}}}`
	)
	deepObjects := strings.Repeat(`{"a": `, 40) + "1" + strings.Repeat("}", 40)
	for _, tt := range []struct{ name, schema, answer string }{
		{"not", `{` + patterns + `, "not": {"$ref": "#/$defs/x"}}`, deepObjects},
		{"if", `{` + itemsTwice + `, "if": {"$ref": "#/$defs/x"}, "then": true}`, explosiveAnswer},
		{"oneOf", `{` + itemsTwice + `, "oneOf": [{"type": "array"}, {"$ref": "#/$defs/x"}]}`, explosiveAnswer},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := agenttypes.Output{Format: agenttypes.OutputJSON, Schema: json.RawMessage(tt.schema)}
			err := returnsWithin(t, func() error { _, err := out.Parse(t.Context(), tt.answer); return err })
			require.ErrorIs(t, err, agenttypes.ErrBadOutput)
			assert.Contains(t, err.Error(), "took too long")
		})
	}
}

// The meter evaluates not, if/then/else and oneOf itself; they mean what
// they meant.
func TestNotIfAndOneOfKeepTheirMeaning(t *testing.T) {
	tests := []struct {
		schema, answer string
		msg            string // "" for valid
	}{
		{`{"not": {"type": "string"}}`, `1`, ""},
		{`{"not": {"type": "string"}}`, `"a"`, "at /: 'not' failed"},
		{`{"if": {"minimum": 10}, "then": {"multipleOf": 2}, "else": {"maximum": 3}}`, `12`, ""},
		{`{"if": {"minimum": 10}, "then": {"multipleOf": 2}, "else": {"maximum": 3}}`, `13`, "at /: multipleOf"},
		{`{"if": {"minimum": 10}, "then": {"multipleOf": 2}, "else": {"maximum": 3}}`, `2`, ""},
		{`{"if": {"minimum": 10}, "then": {"multipleOf": 2}, "else": {"maximum": 3}}`, `5`, "at /: maximum"},
		{`{"oneOf": [{"type": "integer"}, {"minimum": 2}]}`, `1`, ""},
		{`{"oneOf": [{"type": "integer"}, {"minimum": 2}]}`, `3`, "at /: 'oneOf' failed, subschemas 0, 1 matched"},
		{`{"oneOf": [{"type": "integer"}, {"type": "string"}]}`, `true`, "at /: got boolean, want integer"},
		{`{"properties": {"a": {}}, "if": {"required": ["a"]}, "then": {"properties": {"b": {}}}, "unevaluatedProperties": false}`, `{"a": 1, "b": 2}`, ""},
		{`{"oneOf": [{"properties": {"b": {}}, "required": ["b"]}, {"required": ["c"]}], "unevaluatedProperties": false}`, `{"b": 1}`, ""},
		{`{"oneOf": [{"properties": {"b": {}}, "required": ["b"]}, {"required": ["c"]}], "unevaluatedProperties": false}`, `{"b": 1, "d": 1}`, "at /d: false schema"},
		{`{"properties": {"x": {"not": {"not": {"const": 1}}}}}`, `{"x": 2}`, "at /x: 'not' failed"},
	}
	for _, tt := range tests {
		t.Run(tt.schema+" "+tt.answer, func(t *testing.T) {
			out := agenttypes.Output{Format: agenttypes.OutputJSON, Schema: json.RawMessage(tt.schema)}
			_, err := out.Parse(t.Context(), tt.answer)
			if tt.msg == "" {
				assert.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, agenttypes.ErrBadOutput)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

// Validations of one cached schema each have their own meter: a cheap check
// beside one that runs out of work, or whose context ends, is unaffected.
func TestConcurrentChecksOfOneSchema(t *testing.T) {
	out := agenttypes.Output{Format: agenttypes.OutputJSON, Schema: json.RawMessage(explosive)}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				_, err := out.Parse(t.Context(), `[["a"], [["b"]]]`)
				assert.NoError(t, err)
				_, err = out.Parse(t.Context(), `[[2]]`)
				assert.ErrorIs(t, err, agenttypes.ErrBadOutput)
				assert.NotContains(t, err.Error(), "too long")
			}
		})
	}
	wg.Go(func() {
		_, err := out.Parse(t.Context(), explosiveAnswer)
		assert.ErrorIs(t, err, agenttypes.ErrBadOutput)
		assert.Contains(t, err.Error(), "too long")
	})
	wg.Go(func() {
		parent, cancel := context.WithCancel(t.Context())
		ctx := newLookingCtx(parent, nil)
		go func() {
			<-ctx.reached
			cancel()
		}()
		_, err := out.Parse(ctx, explosiveAnswer)
		assert.ErrorIs(t, err, context.Canceled)
	})
	wg.Wait()
}

// The deprecated keywords are checked at load as they always were.
func TestMalformedDeprecatedKeywordsAreRefused(t *testing.T) {
	for _, schema := range []string{`{"definitions": 5}`, `{"dependencies": 5}`, `{"$recursiveRef": 5}`} {
		typ := agenttypes.Type{Name: "a", Description: "d", Output: agenttypes.Output{Format: agenttypes.OutputJSON, Schema: json.RawMessage(schema)}}
		err := typ.Validate()
		require.ErrorIs(t, err, agenttypes.ErrInvalid, schema)
		assert.Contains(t, err.Error(), "breaks the rules of JSON Schema", schema)
	}
}
