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

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
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

// maxIdleInstances is how many compilations of one schema are kept for
// reuse; more are made when more validations of it run at once.
const maxIdleInstances = 4

// A compiledSchema is a schema checked once and compiled as often as
// validations of it overlap: each validation takes an instance of its own,
// whose meter counts its work alone.
type compiledSchema struct {
	once sync.Once
	raw  json.RawMessage
	err  error

	mu   sync.Mutex
	idle []*schemaInstance
}

// noLoader refuses every URL, so a schema's $ref can reach neither the file
// system nor the network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s: output schemas may not refer to other documents; put the definitions under $defs", url)
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
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(c.raw))
		if err != nil {
			c.err = fmt.Errorf("not valid JSON: %w", err)
			return
		}
		if c.err = checkSchemaSize(doc); c.err != nil {
			return
		}
		if c.err = compilePlain(doc); c.err != nil {
			return
		}
		doc, _ = jsonschema.UnmarshalJSON(bytes.NewReader(c.raw)) // a compiler's own copy
		in, err := compileInstance(doc)
		if err != nil {
			c.err = err
			return
		}
		c.idle = append(c.idle, in)
	})
	return c, c.err
}

// compilePlain compiles doc as the library does by default, to check it
// against its draft's whole metaschema: the metered compilation asserts
// vocabularies, and then checks a schema against its draft's vocabularies
// alone, which leave out the deprecated keywords (definitions,
// dependencies, $recursiveRef).
func compilePlain(doc any) error {
	comp := jsonschema.NewCompiler()
	comp.UseLoader(noLoader{})
	comp.DefaultDraft(jsonschema.Draft2020)
	if err := comp.AddResource(schemaURL, doc); err != nil {
		return err
	}
	_, err := comp.Compile(schemaURL)
	return err
}

// validate checks v against the schema within ctx and the work budget;
// see schemaInstance.validate.
func (c *compiledSchema) validate(ctx context.Context, v any) (err, stop error) {
	c.mu.Lock()
	var in *schemaInstance
	if n := len(c.idle); n > 0 {
		in, c.idle = c.idle[n-1], c.idle[:n-1]
	}
	c.mu.Unlock()
	if in == nil {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(c.raw))
		if err == nil {
			in, err = compileInstance(doc)
		}
		if err != nil { // it compiled once already
			return fmt.Errorf("the schema does not compile again: %w", err), nil
		}
	}
	defer func() {
		c.mu.Lock()
		if len(c.idle) < maxIdleInstances {
			c.idle = append(c.idle, in)
		}
		c.mu.Unlock()
	}()
	return in.validate(ctx, v)
}

// checkSchema reports why raw is not a usable schema, in one line.
func checkSchema(raw json.RawMessage) error {
	if _, err := compileSchema(raw); err != nil {
		var sve *jsonschema.SchemaValidationError
		if errors.As(err, &sve) {
			return fmt.Errorf("it breaks the rules of JSON Schema: %s", describeValidation(sve.Err))
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
	err, stop := c.validate(ctx, v)
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
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
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
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
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
	err, stop := c.validate(ctx, v)
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
		return jsonschema.UnmarshalJSON(bytes.NewReader(x))
	case []byte:
		return jsonschema.UnmarshalJSON(bytes.NewReader(x))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("the answer cannot be written as JSON: %w", err)
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

// describeValidation lists the leaf failures as "at /path: message".
func describeValidation(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return oneLine(err.Error())
	}
	var parts []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			at := "/" + strings.Join(e.InstanceLocation, "/")
			parts = append(parts, fmt.Sprintf("at %s: %s", at, e.ErrorKind.LocalizedString(printer)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(parts) > 10 {
		parts = append(parts[:10], fmt.Sprintf("and %d more", len(parts)-10))
	}
	return strings.Join(parts, "; ")
}
