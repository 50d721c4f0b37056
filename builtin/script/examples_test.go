package script_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin"
	"github.com/troupe-dev/troupe/builtin/script"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
	"github.com/troupe-dev/troupe/sdk"
	"github.com/troupe-dev/troupe/sdk/sdktest"
)

func todoRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "pkg"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pkg", "a.go"), []byte("package pkg\n\n// TODO: one\n// FIXME: two\nfunc A() {} // XXX three\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.go"), []byte("package b\n\n// TODO: four\n"), 0o644))
	return dir
}

// The todo-count example's script tool, called by the model through the
// manager, counts the markers under the agent's root.
func TestTodoCountExampleRunsThroughTheManager(t *testing.T) {
	h := script.New(script.Options{})
	defer h.Close()
	var seen string
	model := scripted.New(
		scripted.Step{Calls: []scripted.Call{{Name: "count_todos", Args: `{}`}}},
		scripted.Step{Func: func(_ context.Context, msgs []llms.MessageContent) scripted.Step {
			seen = lastToolText(msgs)
			return scripted.Step{Text: "4 markers, most in pkg/a.go"}
		}},
	)
	def, err := os.ReadFile(filepath.Join("..", "..", "examples", "agents", "todo-count.yaml"))
	require.NoError(t, err)
	mgr := scriptedManager(t, h, model, map[string]string{"todo-count": string(def)})
	defer mgr.Close(context.Background())
	res := run(t, mgr, "todo-count", "how many TODOs?", todoRepo(t))
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.Equal(t, 1, res.ToolCalls)
	assert.Contains(t, seen, "4 marker comments in 2 files")
	assert.Contains(t, seen, "pkg/a.go: 3")
}

// scriptTool is a script tool seen as a plugin's tool, for the SDK's
// conformance suite.
type scriptTool struct{ tool agenttypes.Tool }

func (s scriptTool) Spec() sdk.ToolSpec {
	spec := s.tool.Spec()
	return sdk.ToolSpec{Name: spec.Name, Description: spec.Description, Parameters: spec.Parameters, ReadOnly: spec.ReadOnly}
}

func (s scriptTool) Call(ctx context.Context, req sdk.CallRequest) (*sdk.CallResponse, error) {
	text, err := s.tool.Call(agenttypes.WithEnv(ctx, &agenttypes.Env{AgentID: req.Agent.ID, Dir: req.Agent.Dir, Note: func(string) {}}), req.Args)
	if err != nil {
		return nil, err
	}
	return &sdk.CallResponse{Text: text}, nil
}

// Script tools keep the promises asked of every tool: a well-formed,
// stable spec, argument errors reported rather than panicked, the context
// honoured, concurrent calls safe; in the script host and in process.
func TestScriptToolsConform(t *testing.T) {
	path := filepath.Join("..", "..", "examples", "agents", "todo-count.yaml")
	for name, opts := range map[string]script.Options{"out of process": {}, "in process": {AllInProcess: true}} {
		t.Run(name, func(t *testing.T) {
			h := script.New(opts)
			defer h.Close()
			reg := agenttypes.NewRegistry()
			require.NoError(t, builtin.Register(reg))
			reg.SetScriptCompiler(h)
			types, diags := agenttypes.LoadFiles(agenttypes.LoadOptions{Registry: reg, TrustScripts: agenttypes.TrustAll}, path)
			require.False(t, diags.HasErrors(), diags.String())
			require.Len(t, types, 1)
			tool, ok := types[0].Hooks.Tool("count_todos")
			require.True(t, ok)
			agent := sdk.Agent{ID: "agent-1", Dir: todoRepo(t)}
			sdktest.TestTool(t, scriptTool{tool},
				sdktest.Case{Args: `{}`, Agent: agent, Want: []string{"4 marker comments in 2 files"}, Deterministic: true},
				sdktest.Case{Args: `{"path":"pkg"}`, Agent: agent, Want: []string{"3 marker comments in 1 files"}, Deterministic: true},
			)
		})
	}
}
