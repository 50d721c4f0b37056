package manager_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

func mcpTool(name string) agenttypes.Tool {
	return &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: name, Description: "an MCP server's tool"},
		Func:     func(context.Context, json.RawMessage) (string, error) { return "called " + name, nil },
	}
}

// mcpFixture registers the tools of two servers, as a run's MCP pool
// would, and a type that may use one server's tools but one.
func mcpFixture(t *testing.T, model *scripted.Model) *fixture {
	t.Helper()
	f := newFixture(t, model, nil)
	for _, name := range []string{"mcp__fs__read", "mcp__fs__delete", "mcp__other__x"} {
		require.NoError(t, f.reg.RegisterTool(mcpTool(name)))
	}
	require.NoError(t, f.reg.RegisterType(agenttypes.Type{
		Name: "mcpuser", Description: "uses fs",
		Tools: []string{"echo", "mcp__fs__*"}, DisallowedTools: []string{"mcp__fs__delete"},
		MCPServers: []agenttypes.MCPServer{{Name: "fs", Command: "fs-server"}},
	}))
	return f
}

func TestAnMCPPatternGivesAnAgentTheServersToolsItsTypeAllows(t *testing.T) {
	model := scripted.New(scripted.Step{Calls: []scripted.Call{{Name: "mcp__fs__delete", Args: `{}`}}}, scripted.Step{Text: "done"})
	f := mcpFixture(t, model)
	res := f.run(t, manager.SpawnRequest{Type: "mcpuser"})
	require.Equal(t, manager.Completed, res.State, res.Error)
	reqs := model.Requests()
	require.NotEmpty(t, reqs)
	assert.ElementsMatch(t, []string{"echo", "mcp__fs__read"}, reqs[0].Tools, "the pattern's tools, less the disallowed one and other servers'")
	results := scripted.ToolResults(reqs[1].Messages)
	require.Len(t, results, 1)
	assert.Contains(t, results[0].Content, "not", "a disallowed MCP tool is refused, never called")
	assert.NotContains(t, results[0].Content, "called")
}

func TestATaskNarrowsToAnMCPToolAndNeverWidens(t *testing.T) {
	model := scripted.New(scripted.Step{Text: "done"})
	f := mcpFixture(t, model)
	res := f.run(t, manager.SpawnRequest{Type: "mcpuser", Tools: []string{"mcp__fs__read"}})
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.Equal(t, []string{"mcp__fs__read"}, model.Requests()[0].Tools)

	_, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "mcpuser", Task: "x", Tools: []string{"mcp__fs__delete"}})
	require.ErrorIs(t, err, manager.ErrBadRequest, "narrowing never adds a disallowed tool")
}

func TestATypeWhoseMCPServerOffersNoToolsYetRunsWithoutThem(t *testing.T) {
	model := scripted.New(scripted.Step{Text: "done"})
	f := newFixture(t, model, nil)
	require.NoError(t, f.reg.RegisterType(agenttypes.Type{
		Name: "ghuser", Description: "uses gh", Tools: []string{"echo", "mcp__gh__*"},
		MCPServers: []agenttypes.MCPServer{{Name: "gh", Command: "gh-server"}},
	}))
	res := f.run(t, manager.SpawnRequest{Type: "ghuser"})
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.Equal(t, []string{"echo"}, model.Requests()[0].Tools)
}
