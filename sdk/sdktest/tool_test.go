package sdktest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/sdk"
)

const upperParams = `{"type":"object","properties":{"text":{"type":"string","maxLength":100},"wait":{"type":"boolean"}},"required":["text"],"additionalProperties":false}`

type upperArgs struct {
	Text string `json:"text"`
	Wait bool   `json:"wait"`
}

// strict decodes args as a well-behaved tool does: unknown fields,
// trailing data and missing arguments are errors.
func strict(args json.RawMessage, dst *upperArgs) error {
	if t := bytes.TrimSpace(args); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		args = json.RawMessage(`{}`)
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return sdk.Errorf(sdk.CodeInvalidArgument, "upper: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return sdk.Errorf(sdk.CodeInvalidArgument, "upper: unexpected data after the arguments")
	}
	if dst.Text == "" {
		return sdk.Errorf(sdk.CodeInvalidArgument, `upper: missing "text"`)
	}
	return nil
}

// upper is a well-behaved tool: it upper-cases text, and with wait it
// waits for its context.
func upper() *sdk.ToolFunc {
	return &sdk.ToolFunc{
		ToolSpec: sdk.ToolSpec{
			Name:        "upper",
			Description: "Upper-cases text.",
			Parameters:  json.RawMessage(upperParams),
			ReadOnly:    true,
		},
		Func: func(ctx context.Context, req sdk.CallRequest) (*sdk.CallResponse, error) {
			var a upperArgs
			if err := strict(req.Args, &a); err != nil {
				return nil, err
			}
			if a.Wait {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return &sdk.CallResponse{Text: strings.ToUpper(a.Text)}, nil
		},
	}
}

func upperCases() []Case {
	return []Case{
		{Args: `{"text":"abc"}`, Want: []string{"ABC"}, Deterministic: true},
		{Name: "no text", Args: `{}`, WantErr: true, Want: []string{`missing "text"`}},
		{Name: "waits", Args: `{"text":"a","wait":true}`, Slow: true},
	}
}

// specTool is upper with its spec changed.
func specTool(change func(*sdk.ToolSpec)) *sdk.ToolFunc {
	t := upper()
	change(&t.ToolSpec)
	return t
}

// unstable returns a different description on every call.
type unstable struct {
	*sdk.ToolFunc
	n atomic.Int64
}

func (u *unstable) Spec() sdk.ToolSpec {
	s := u.ToolFunc.Spec()
	s.Description = fmt.Sprintf("Upper-cases text (call %d).", u.n.Add(1))
	return s
}

// withCall is upper with its Call replaced.
func withCall(f func(ctx context.Context, req sdk.CallRequest) (*sdk.CallResponse, error)) *sdk.ToolFunc {
	t := upper()
	t.Func = f
	return t
}

func TestCheckToolPassesAWellBehavedTool(t *testing.T) {
	require.NoError(t, CheckTool(upper(), upperCases()...))
}

func TestCheckToolCatchesBrokenTools(t *testing.T) {
	good := upper()
	var slowCalls sync.WaitGroup
	t.Cleanup(slowCalls.Wait) // the calls that ignore ctx end before goleak looks
	var counter atomic.Int64

	tests := []struct {
		name  string
		tool  sdk.Tool
		cases []Case
		want  []string
	}{
		{"nil tool", nil, nil, []string{"the tool is nil"}},
		{"Spec panics", panicSpec{}, nil, []string{"Spec panicked: no spec"}},
		{"name with spaces and capitals", specTool(func(s *sdk.ToolSpec) { s.Name = "Upper Case" }), upperCases(),
			[]string{"the name must be lower case"}},
		{"empty name", specTool(func(s *sdk.ToolSpec) { s.Name = "" }), upperCases(), []string{"the name is empty"}},
		{"empty description", specTool(func(s *sdk.ToolSpec) { s.Description = " " }), upperCases(), []string{"the description is empty"}},
		{"unstable spec", &unstable{ToolFunc: upper()}, upperCases(), []string{"Spec returned a different value"}},
		{"parameters not JSON", specTool(func(s *sdk.ToolSpec) { s.Parameters = json.RawMessage(`{"type":`) }), upperCases(),
			[]string{"the parameters are not valid JSON"}},
		{"parameters empty", specTool(func(s *sdk.ToolSpec) { s.Parameters = nil }), upperCases(), []string{"the parameters are empty"}},
		{"parameters an array", specTool(func(s *sdk.ToolSpec) { s.Parameters = json.RawMessage(`[]`) }), upperCases(),
			[]string{"must be a JSON schema object, not an array"}},
		{"parameters not of type object", specTool(func(s *sdk.ToolSpec) {
			s.Parameters = json.RawMessage(`{"type":"string","properties":{}}`)
		}), upperCases(), []string{`must have "type": "object"`}},
		{"parameters without properties", specTool(func(s *sdk.ToolSpec) { s.Parameters = json.RawMessage(`{"type":"object"}`) }), upperCases(),
			[]string{`must have "properties"`}},
		{"required parameter not in properties", specTool(func(s *sdk.ToolSpec) {
			s.Parameters = json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["txt"]}`)
		}), upperCases(), []string{`required parameter txt is not in properties`}},
		{"parameters break JSON Schema", specTool(func(s *sdk.ToolSpec) {
			s.Parameters = json.RawMessage(`{"type":"object","properties":{"text":{"type":"strin"}}}`)
		}), upperCases(), []string{"the parameters are not a JSON schema"}},
		{"case args the schema refuses", good, []Case{{Args: `{"text":"` + strings.Repeat("a", 101) + `"}`}},
			[]string{"do not match the tool's parameters schema"}},
		{"panics on bad arguments", withCall(func(_ context.Context, req sdk.CallRequest) (*sdk.CallResponse, error) {
			var m map[string]any
			if err := json.Unmarshal(req.Args, &m); err != nil {
				return nil, err
			}
			return &sdk.CallResponse{Text: strings.ToUpper(m["text"].(string))}, nil
		}), upperCases()[:1], []string{`an empty object: Call panicked`, `argument "text" of the wrong type: Call panicked`}},
		{"accepts malformed JSON", withCall(func(_ context.Context, req sdk.CallRequest) (*sdk.CallResponse, error) {
			var a upperArgs
			_ = json.Unmarshal(req.Args, &a)
			return &sdk.CallResponse{Text: strings.ToUpper(a.Text)}, nil
		}), upperCases()[:1], []string{`malformed JSON: want an error, got none (args "{"`, `JSON that is not an object: want an error`,
			`argument "text" of the wrong type: want an error`, `an empty object: want an error`, `null: want an error`}},
		{"accepts unknown arguments", withCall(func(_ context.Context, req sdk.CallRequest) (*sdk.CallResponse, error) {
			var a upperArgs
			if err := json.Unmarshal(req.Args, &a); err != nil {
				return nil, err
			}
			if a.Text == "" {
				return nil, errors.New("missing text")
			}
			return &sdk.CallResponse{Text: strings.ToUpper(a.Text)}, nil
		}), upperCases()[:1], []string{"an unknown argument: want an error"}},
		{"nil response", withCall(func(context.Context, sdk.CallRequest) (*sdk.CallResponse, error) { return nil, nil }),
			upperCases()[:1], []string{"returned a nil *CallResponse and a nil error"}},
		{"ignores a cancelled context", withCall(func(ctx context.Context, req sdk.CallRequest) (*sdk.CallResponse, error) {
			var a upperArgs
			if err := strict(req.Args, &a); err != nil {
				return nil, err
			}
			if a.Wait {
				slowCalls.Add(1)
				defer slowCalls.Done()
				time.Sleep(3 * cancelGrace)
				return nil, errors.New("gave up")
			}
			return &sdk.CallResponse{Text: a.Text}, nil
		}), upperCases(), []string{`waits: Call did not return within 300ms of its context being cancelled`}},
		{"answers a cancelled call with success", withCall(func(ctx context.Context, req sdk.CallRequest) (*sdk.CallResponse, error) {
			var a upperArgs
			if err := strict(req.Args, &a); err != nil {
				return nil, err
			}
			if a.Wait {
				<-ctx.Done()
			}
			return &sdk.CallResponse{Text: a.Text}, nil
		}), upperCases(), []string{"waits: cancelled while running, Call returned no error"}},
		{"Slow case that is quick", good, []Case{{Args: `{"text":"a"}`, Slow: true}}, []string{"the case is Slow but Call returned"}},
		{"answers differ when called at once", withCall(func(_ context.Context, req sdk.CallRequest) (*sdk.CallResponse, error) {
			var a upperArgs
			if err := strict(req.Args, &a); err != nil {
				return nil, err
			}
			return &sdk.CallResponse{Text: fmt.Sprint(a.Text, counter.Add(1))}, nil
		}), upperCases()[:1], []string{"called from 8 goroutines at once: the text differs"}},
		{"case wants what the tool does not give", good, []Case{{Args: `{"text":"abc"}`, Want: []string{"XYZ"}}},
			[]string{`want "XYZ" in "ABC"`}},
		{"case wants an error that does not come", good, []Case{{Args: `{"text":"abc"}`, WantErr: true}},
			[]string{"want an error, got none"}},
		{"case fails that should not", good, []Case{{Args: `{"text":"abc","wait":false,"x":1}`}},
			[]string{"want no error, got upper"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckTool(tt.tool, tt.cases...)
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.True(t, strings.HasPrefix(err.Error(), "sdktest: tool "), err.Error())
		})
	}
}

type panicSpec struct{}

func (panicSpec) Spec() sdk.ToolSpec { panic("no spec") }
func (panicSpec) Call(context.Context, sdk.CallRequest) (*sdk.CallResponse, error) {
	return nil, errors.New("unreachable")
}

// fakeTB records what TestTool and TestLoop report.
type fakeTB struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Error(args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errors = append(f.errors, fmt.Sprint(args...))
}

func TestTestToolReportsEachProblemToT(t *testing.T) {
	tb := &fakeTB{}
	TestTool(tb, specTool(func(s *sdk.ToolSpec) { s.Name, s.Description = "Upper", "" }), upperCases()...)
	require.Len(t, tb.errors, 2, tb.errors)
	assert.Contains(t, tb.errors[0], "the name must be lower case")
	assert.Contains(t, tb.errors[1], "the description is empty")

	tb = &fakeTB{}
	TestTool(tb, upper(), upperCases()...)
	assert.Empty(t, tb.errors)
}

func TestCheckToolDoesNotRequireAdditionalPropertiesFalse(t *testing.T) {
	// Without additionalProperties false, unknown arguments may be taken.
	tool := withCall(func(_ context.Context, req sdk.CallRequest) (*sdk.CallResponse, error) {
		var a upperArgs
		if err := json.Unmarshal(req.Args, &a); err != nil {
			return nil, err
		}
		if a.Text == "" {
			return nil, errors.New("missing text")
		}
		return &sdk.CallResponse{Text: a.Text}, nil
	})
	tool.Parameters = json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)
	assert.NoError(t, CheckTool(tool, Case{Args: `{"text":"a"}`}))
}
