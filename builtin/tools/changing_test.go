package tools_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/tools"
	"github.com/troupe-dev/troupe/sdk"
	"github.com/troupe-dev/troupe/sdk/sdktest"
)

func TestChangingSpecs(t *testing.T) {
	want := map[string][]string{
		"write": {"path", "content"},
		"edit":  {"path", "old_string", "new_string", "replace_all"},
		"run":   {"command", "timeout"},
		"merge": {"agent"},
	}
	all := tools.Changing()
	require.Len(t, all, 4)
	var names []string
	for _, tool := range all {
		spec := tool.Spec()
		names = append(names, spec.Name)
		t.Run(spec.Name, func(t *testing.T) {
			assert.False(t, spec.ReadOnly)
			assert.ElementsMatch(t, want[spec.Name], checkSpec(t, tool))
		})
	}
	assert.Equal(t, agenttypes.ChangingTools, names, "the tools a type's workspace depends on")
}

// An agent without a workspace of its own is refused by every changing
// tool, and its directory is left alone.
func TestChangingToolsNeedAWorkspace(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.txt": "alpha\n"})
	args := map[string]string{
		"write": `{"path":"a.txt","content":"x"}`,
		"edit":  `{"path":"a.txt","old_string":"alpha","new_string":"x"}`,
		"run":   `{"command":"go test"}`,
		"merge": `{"agent":"a-1"}`,
	}
	for _, tool := range tools.Changing() {
		name := tool.Spec().Name
		// An agent of a read-only type: a directory and a tree, no
		// workspace.
		_, err := callTree(context.Background(), tool, &fakeTree{}, dir, args[name])
		require.Error(t, err, name)
		assert.Equal(t, name+": this agent has no workspace of its own: only types that list write, edit, run or merge get one, and only their agents may change files or run commands", err.Error())
	}
	got, err := os.ReadFile(filepath.Join(dir, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "alpha\n", string(got))
}

func TestChangingToolsCancelledContext(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.txt": "alpha\n"})
	ws := &fakeWorkspace{dir: dir}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tool := range tools.Changing() {
		_, err := callWS(ctx, tool, ws, &fakeTree{}, `{"path":"a.txt","content":"x","command":"go test","agent":"a"}`)
		require.ErrorIs(t, err, context.Canceled, tool.Spec().Name)
	}
	assert.Empty(t, ws.ran)
	got, err := os.ReadFile(filepath.Join(dir, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "alpha\n", string(got))
}

// asSDK makes a changing tool an sdk.Tool whose agent's workspace is a
// fakeWorkspace over the agent's directory.
type asSDK struct {
	tool agenttypes.Tool
	tree agenttypes.Tree
}

func (a asSDK) Spec() sdk.ToolSpec {
	s := a.tool.Spec()
	return sdk.ToolSpec{Name: s.Name, Description: s.Description, Parameters: s.Parameters, ReadOnly: s.ReadOnly}
}

func (a asSDK) Call(ctx context.Context, req sdk.CallRequest) (*sdk.CallResponse, error) {
	ws := &fakeWorkspace{dir: req.Agent.Dir, result: agenttypes.CommandResult{Output: "ok\n"}}
	text, err := callWS(ctx, a.tool, ws, a.tree, string(req.Args))
	if err != nil {
		return nil, err
	}
	return &sdk.CallResponse{Text: text}, nil
}

// The changing tools keep the promises the plugin SDK's suite asks of
// every tool: strict arguments, no panics, cancellation, concurrency.
func TestChangingToolsConform(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.txt": "alpha\nbeta\n"})
	agent := sdk.Agent{ID: "agent-1", Dir: dir}
	ok := func(args string, want ...string) sdktest.Case {
		return sdktest.Case{Args: args, Agent: agent, Want: want, Deterministic: true}
	}
	bad := func(args string, want ...string) sdktest.Case {
		return sdktest.Case{Args: args, Agent: agent, Want: want, WantErr: true}
	}
	tree := &fakeTree{changes: map[string]*agenttypes.Changes{"fixer": childChanges("a.txt")}}
	tests := []struct {
		tool  agenttypes.Tool
		cases []sdktest.Case
	}{
		{tools.Write(), []sdktest.Case{
			// Not deterministic: the answer says whether the file was
			// there before.
			{Args: `{"path":"out/b.txt","content":"bee\n"}`, Agent: agent, Want: []string{"out/b.txt"}},
			bad(`{"path":"../outside.txt","content":"x"}`, "outside the root"),
		}},
		{tools.Edit(), []sdktest.Case{
			bad(`{"path":"a.txt","old_string":"gamma","new_string":"delta"}`, "old_string is not in a.txt"),
			bad(`{"path":"../a.txt","old_string":"a","new_string":"b"}`, "outside the root"),
		}},
		{tools.Run(), []sdktest.Case{
			ok(`{"command":"go test ./..."}`, "exit status 0", "ok"),
			bad(`{"command":"go test; rm -rf /"}`, "shell operator"),
		}},
		{tools.Merge(), []sdktest.Case{
			ok(`{"agent":"fixer"}`, "merged the changes of agent fixer"),
			ok(`{"agent":"nobody"}`, "nothing to merge"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.tool.Spec().Name, func(t *testing.T) {
			t.Parallel()
			sdktest.TestTool(t, asSDK{tool: tt.tool, tree: tree}, tt.cases...)
		})
	}
}
