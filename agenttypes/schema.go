package agenttypes

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/troupe-dev/troupe/agenttypes/internal/jsonschema"
)

var printer = message.NewPrinter(language.English)

// ErrBadOutput is wrapped by Output.Validate and Output.Parse when an answer
// does not match the type's output schema, or took too long to check
// against it.
var ErrBadOutput = errors.New("answer does not match the output schema")

// schemaURL names the one resource each compiled output schema holds.
const schemaURL = "mem:///output.schema.json"

// compiled output schemas by the SHA-256 of their bytes; the cache is
// dropped whole when it grows past maxCachedSchemas, which only repeated
// reloads of changing definitions can do.
var schemaCache = struct {
	sync.Mutex
	m map[[32]byte]*compiledSchema
}{m: map[[32]byte]*compiledSchema{}}

const maxCachedSchemas = 256

// A compiledSchema is a schema checked and compiled once. Validations of
// it may run at once: each has a meter of its own.
type compiledSchema struct {
	once sync.Once
	raw  json.RawMessage
	sch  *jsonschema.Schema
	err  error
}

// compileSchema checks raw (see checkSchemaSize) and compiles it, once per
// distinct schema.
func compileSchema(raw json.RawMessage) (*compiledSchema, error) {
	key := sha256.Sum256(raw)
	schemaCache.Lock()
	c, ok := schemaCache.m[key]
	if !ok {
		if len(schemaCache.m) >= maxCachedSchemas {
			clear(schemaCache.m)
		}
		c = &compiledSchema{raw: bytes.Clone(raw)}
		schemaCache.m[key] = c
	}
	schemaCache.Unlock()
	c.once.Do(func() {
		doc, err := jsonschema.Unmarshal(bytes.NewReader(c.raw))
		if err != nil {
			c.err = fmt.Errorf("not valid JSON: %w", err)
			return
		}
		if c.err = checkSchemaSize(doc); c.err != nil {
			return
		}
		c.sch, c.err = jsonschema.Compile(doc, schemaURL)
	})
	return c, c.err
}

// checkSchema reports why raw is not a usable schema, in one line.
func checkSchema(raw json.RawMessage) error {
	if _, err := compileSchema(raw); err != nil {
		var se *jsonschema.SchemaError
		if errors.As(err, &se) {
			return fmt.Errorf("it breaks the rules of JSON Schema: %s", oneLine(se.Error()))
		}
		return errors.New(oneLine(err.Error()))
	}
	return nil
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, schemaURL, "schema")
	return strings.Join(strings.Fields(s), " ")
}

// Validate checks an answer already decoded from JSON (maps, slices,
// strings, numbers, booleans, nil; or any value that marshals to JSON)
// against the schema. It returns nil when Format is not json or there is no
// schema. The error wraps ErrBadOutput and says, in words a model can act
// on, which parts of the answer are wrong, or that the answer took too long
// to check (a schema whose cost explodes with the answer's nesting).
// Checking stops when ctx ends, with an error wrapping ctx.Err(), so a run
// out of time or cancelled is not mistaken for a bad answer.
func (o Output) Validate(ctx context.Context, v any) error {
	if o.Format != OutputJSON || len(o.Schema) == 0 {
		return nil
	}
	c, err := compileSchema(o.Schema)
	if err != nil {
		return fmt.Errorf("%w: the type's output schema is unusable: %s", ErrInvalid, oneLine(err.Error()))
	}
	v, err = plainJSON(v)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadOutput, err)
	}
	err, stop := validateMetered(ctx, c.sch, v)
	switch {
	case errors.Is(stop, errSchemaWork):
		return fmt.Errorf("%w: the answer took too long to check against the schema; reply with a smaller, less deeply nested answer", ErrBadOutput)
	case stop != nil:
		return fmt.Errorf("checking the answer against the output schema stopped: %w", stop)
	case err != nil:
		return fmt.Errorf("%w: %s", ErrBadOutput, describeValidation(err))
	}
	return nil
}

// Parse reads an answer as JSON (allowing a Markdown code fence around it)
// and validates it within ctx, as Validate does. With Format text it
// returns the answer unchanged.
func (o Output) Parse(ctx context.Context, answer string) (any, error) {
	if o.Format != OutputJSON {
		return answer, nil
	}
	s := strings.TrimSpace(answer)
	if rest, ok := strings.CutPrefix(s, "```"); ok {
		if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
			rest = rest[nl+1:]
		}
		s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "```"))
	}
	v, err := jsonschema.Unmarshal(strings.NewReader(s))
	if err != nil {
		return nil, fmt.Errorf("%w: the answer is not valid JSON (%v); reply with only the JSON value", ErrBadOutput, err)
	}
	if err := o.Validate(ctx, v); err != nil {
		return nil, err
	}
	return v, nil
}

// ValidateArgs checks a tool call's arguments against the tool's declared
// parameters, a JSON schema; empty parameters take any JSON object. The
// error says, in words a model can act on, which arguments are wrong, or
// that they took too long to check. Checking stops when ctx ends, with an
// error wrapping ctx.Err().
func ValidateArgs(ctx context.Context, params, args json.RawMessage) error {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	v, err := jsonschema.Unmarshal(bytes.NewReader(args))
	if err != nil {
		return fmt.Errorf("the arguments are not valid JSON: %v", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return errors.New("the arguments must be a JSON object")
	}
	if len(params) == 0 {
		return nil
	}
	c, err := compileSchema(params)
	if err != nil {
		return fmt.Errorf("the tool's parameters are not a usable schema: %s", oneLine(err.Error()))
	}
	err, stop := validateMetered(ctx, c.sch, v)
	switch {
	case errors.Is(stop, errSchemaWork):
		return errors.New("the arguments took too long to check against the tool's parameters; send smaller, less deeply nested arguments")
	case stop != nil:
		return fmt.Errorf("checking the arguments against the tool's parameters stopped: %w", stop)
	case err != nil:
		return fmt.Errorf("the arguments do not match the tool's parameters: %s", describeValidation(err))
	}
	return nil
}

// plainJSON turns v into the plain values the validator reads.
func plainJSON(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, string, float64, float32, int, int64, int32, uint, uint64, json.Number, map[string]any, []any:
		return x, nil
	case json.RawMessage:
		return jsonschema.Unmarshal(bytes.NewReader(x))
	case []byte:
		return jsonschema.Unmarshal(bytes.NewReader(x))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("the answer cannot be written as JSON: %w", err)
	}
	return jsonschema.Unmarshal(bytes.NewReader(b))
}

// describeValidation lists the leaf failures as "at /path: message".
func describeValidation(err error) string {
	var ve *jsonschema.Error
	if !errors.As(err, &ve) {
		return oneLine(err.Error())
	}
	var parts []string
	ve.Leaves(func(e *jsonschema.Error) {
		parts = append(parts, fmt.Sprintf("at %s: %s", e.Location(), e.Msg))
	})
	if len(parts) > 10 {
		parts = append(parts[:10], fmt.Sprintf("and %d more", len(parts)-10))
	}
	return strings.Join(parts, "; ")
}
