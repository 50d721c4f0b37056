package script

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

const goodHooks = `package hooks

import (
	"strings"
	"troupe"
)

func Prompt(task troupe.Task) (string, error) { return strings.ToUpper(task.Prompt), nil }

func Result(output string) (any, error) { return map[string]any{"len": len(output)}, nil }
`

func TestSmoke(t *testing.T) {
	for _, inproc := range []bool{true, false} {
		h := New(Options{AllInProcess: inproc})
		hooks, diags := h.Compile(context.Background(), "t", &agenttypes.Scripts{Hooks: &agenttypes.Script{Source: goodHooks, File: "x.yaml", Line: 3, Col: 2}})
		require.Empty(t, diags)
		s, err := hooks.Prompt(context.Background(), agenttypes.ScriptTask{Prompt: "abc"})
		require.NoError(t, err)
		require.Equal(t, "ABC", s)
		v, err := hooks.Result(context.Background(), "hello")
		require.NoError(t, err)
		require.Equal(t, map[string]any{"len": 5.0}, v)
		require.NoError(t, h.Close())
	}
}

const argsHooks = `package hooks

import (
	"errors"
	"strconv"
	"troupe"
)

func BeforeTool(call troupe.ToolCall) error {
	if call.Args == nil {
		return errors.New("no arguments")
	}
	return errors.New(call.Name + " with " + strconv.Itoa(len(call.Args)) + " arguments")
}

func Run(args map[string]any) (string, error) {
	s, _ := args["s"].(string)
	return s + " of " + strconv.Itoa(len(args)), nil
}
`

// A tool call's arguments reach a script decoded, in process and out of
// it; arguments that are not JSON reach a BeforeTool hook as none rather
// than failing it.
func TestToolArgumentsReachTheScriptDecoded(t *testing.T) {
	for _, inproc := range []bool{true, false} {
		h := New(Options{AllInProcess: inproc})
		hooks, diags := h.Compile(context.Background(), "t", &agenttypes.Scripts{
			Hooks: &agenttypes.Script{Source: argsHooks, File: "x.yaml", Line: 1},
			Tools: []agenttypes.ScriptTool{{Name: "echo", Script: agenttypes.Script{Source: argsHooks, File: "x.yaml", Line: 1}}},
		})
		require.Empty(t, diags)
		err := hooks.BeforeTool(context.Background(), "read", json.RawMessage(`{"path":"a","n":2}`))
		require.EqualError(t, err, "read with 2 arguments", "in process: %v", inproc)
		err = hooks.BeforeTool(context.Background(), "read", json.RawMessage(`{"path":`))
		require.EqualError(t, err, "no arguments", "in process: %v", inproc)
		out, err := hooks.Tools[0].Call(context.Background(), json.RawMessage(`{"s":"hi","t":1}`))
		require.NoError(t, err)
		require.Equal(t, "hi of 2", out, "in process: %v", inproc)
		require.NoError(t, h.Close())
	}
}
