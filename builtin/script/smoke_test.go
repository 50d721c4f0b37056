package script

import (
	"context"
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
