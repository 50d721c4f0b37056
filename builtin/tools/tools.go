package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/fsroot"
)

// ReadOnly returns the read-only file tools: read, grep, symbols, glob, ls
// and git.
func ReadOnly() []agenttypes.Tool {
	return []agenttypes.Tool{Read(), Grep(), Symbols(), Glob(), Ls(), Git()}
}

// tool is a builtin tool: a fixed spec, and a function that runs with the
// agent's root opened.
type tool struct {
	spec agenttypes.ToolSpec
	run  func(ctx context.Context, root *fsroot.Root, args json.RawMessage) (string, error)
}

func (t *tool) Spec() agenttypes.ToolSpec { return t.spec }

func (t *tool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	env := agenttypes.EnvFrom(ctx)
	if env.Dir == "" {
		return "", fmt.Errorf("%s: no working directory: the tool must be called by an agent with a directory (agenttypes.Env.Dir)", t.spec.Name)
	}
	// Opened per call: the root is cheap to open and the tool value is
	// shared by every agent, each with its own directory.
	root, err := agentRoot(env)
	if err != nil {
		return "", fmt.Errorf("%s: %w", t.spec.Name, err)
	}
	defer root.Close()
	out, err := t.run(ctx, root, args)
	if err != nil {
		return "", fmt.Errorf("%s: %w", t.spec.Name, err)
	}
	return out, nil
}

func newTool(name, description, params string, run func(context.Context, *fsroot.Root, json.RawMessage) (string, error)) *tool {
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(params)); err != nil {
		panic("tools: bad schema for " + name + ": " + err.Error())
	}
	return &tool{
		spec: agenttypes.ToolSpec{
			Name:        name,
			Description: description,
			Parameters:  json.RawMessage(buf.Bytes()),
			ReadOnly:    true,
		},
		run: run,
	}
}

// decodeArgs parses args strictly into dst (a pointer to a struct with
// json tags). Unknown fields and trailing data are errors that name the
// valid fields, so a model can correct itself.
func decodeArgs(args json.RawMessage, dst any) error {
	if len(bytes.TrimSpace(args)) == 0 || bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
		args = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if err == nil {
		// More misses a stray '}' or ']'; only the end of the input will do.
		if _, end := dec.Token(); end != io.EOF {
			err = errors.New("unexpected data after the arguments object")
		}
	}
	if err == nil {
		return nil
	}
	valid := strings.Join(fieldNames(dst), ", ")
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return fmt.Errorf("unknown argument %s; valid arguments are %s", name, valid)
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		return fmt.Errorf("argument %q must be %s, not a JSON %s", typeErr.Field, jsonKind(typeErr.Type), typeErr.Value)
	}
	return fmt.Errorf("arguments must be a JSON object with fields %s: %s", valid, strings.TrimPrefix(msg, "json: "))
}

func fieldNames(dst any) []string {
	t := reflect.TypeOf(dst).Elem()
	var names []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// jsonKind names a Go type as JSON, with an article.
func jsonKind(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[rawObject]() {
		return "an object"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(jsonKind(t.Elem()), "a "), "an ") + "s"
	}
	return t.String()
}
