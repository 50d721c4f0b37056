package manager_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

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

// mcpSource is an MCP tool source of fixed servers: a server's tools by
// name (served by mcpTool), or its error. It counts the descriptions it
// gives, and when gate is set holds each until gate is closed.
type mcpSource struct {
	mu    sync.Mutex
	tools map[string][]string
	fail  map[string]error
	calls map[string]int
	gate  chan struct{}
}

func newMCPSource() *mcpSource {
	return &mcpSource{
		tools: map[string][]string{"fs": {"read", "delete"}},
		fail:  map[string]error{},
		calls: map[string]int{},
	}
}

func (s *mcpSource) Tools(ctx context.Context, server string) ([]agenttypes.Tool, error) {
	s.mu.Lock()
	s.calls[server]++
	names, known := s.tools[server]
	err, gate := s.fail[server], s.gate
	s.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err != nil {
		return nil, err
	}
	if !known {
		return nil, fmt.Errorf("unknown MCP server %q", server)
	}
	var out []agenttypes.Tool
	for _, n := range names {
		out = append(out, mcpTool(agenttypes.MCPToolName(server, n)))
	}
	return out, nil
}

func (s *mcpSource) described(server string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[server]
}

func (s *mcpSource) setFail(server string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		delete(s.fail, server)
		return
	}
	s.fail[server] = err
}

// fsServer is the server "fs" as a project's .mcp.json declares it.
var fsServer = agenttypes.MCPServer{Name: "fs", Command: "fs-server", Source: "project/.mcp.json"}

// mcpTree is a tree fixture whose manager describes MCP servers with src,
// and whose type "fsuser" names the server fs; the lead names none.
func mcpTree(t *testing.T, src *mcpSource, script map[string][]scripted.Step) *treeFixture {
	t.Helper()
	tf := newTreeFixture(t, script, func(c *manager.Config) { c.MCP = src })
	require.NoError(t, tf.reg.RegisterType(agenttypes.Type{
		Name: "fsuser", Description: "reads through fs", Tools: []string{"echo", "mcp__fs__*"},
		MCPServers: []agenttypes.MCPServer{fsServer},
	}))
	return tf
}

func TestADelegatedChildGetsTheToolsOfTheMCPServerItsTypeNames(t *testing.T) {
	src := newMCPSource()
	tf := mcpTree(t, src, map[string][]scripted.Step{
		"coordinate": {
			delegateCall(agenttypes.DelegateRequest{Tasks: []agenttypes.ChildTask{{Label: "reader", Type: "fsuser", Prompt: "read the file"}}}),
			{Text: "done"},
		},
		"read the file": {{Calls: []scripted.Call{{Name: "mcp__fs__read", Args: `{}`}}}, {Text: "read it"}},
	})
	res := tf.run(t, manager.SpawnRequest{Type: "lead", Task: "coordinate"})
	require.Equal(t, manager.Completed, res.State, res.Error)

	lead := requestsFor(tf.model, "coordinate")
	require.NotEmpty(t, lead)
	assert.NotContains(t, lead[0].Tools, "mcp__fs__read", "the lead's type names no MCP server")
	child := requestsFor(tf.model, "read the file")
	require.NotEmpty(t, child, "the child ran")
	assert.Subset(t, child[0].Tools, []string{"echo", "mcp__fs__read", "mcp__fs__delete"}, "the server named by the child's type, described at its spawn")
	assert.Equal(t, "called mcp__fs__read", lastToolResult(t, tf.model, "read the file"))
	assert.Equal(t, 1, src.described("fs"))
}

func TestAnMCPServerThatCannotBeDescribedFailsTheSpawnNamingItAndItsFile(t *testing.T) {
	src := newMCPSource()
	src.setFail("fs", errors.New(`exec: "fs-server": executable file not found in $PATH`))
	tf := mcpTree(t, src, map[string][]scripted.Step{
		"coordinate": {
			delegateCall(agenttypes.DelegateRequest{Tasks: []agenttypes.ChildTask{{Label: "reader", Type: "fsuser", Prompt: "read the file"}}}),
			{Text: "the reader could not start"},
		},
	})
	_, err := tf.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "fsuser", Task: "read the file"})
	require.ErrorIs(t, err, manager.ErrMCPServer)
	for _, want := range []string{`"fsuser"`, `MCP server "fs"`, "project/.mcp.json", "executable file not found"} {
		assert.Contains(t, err.Error(), want)
	}

	res := tf.run(t, manager.SpawnRequest{Type: "lead", Task: "coordinate"})
	require.Equal(t, manager.Completed, res.State, res.Error)
	told := lastToolResult(t, tf.model, "coordinate")
	for _, want := range []string{`MCP server "fs"`, "project/.mcp.json", "executable file not found"} {
		assert.Contains(t, told, want, "the delegate tool's error reaches the parent's model")
	}
	assert.Empty(t, requestsFor(tf.model, "read the file"), "the child never ran without its server")

	src.setFail("fs", nil)
	res = tf.run(t, manager.SpawnRequest{Type: "fsuser", Task: "read again"})
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.Equal(t, 3, src.described("fs"), "a failure is not remembered: the next spawn asks again")
}

func TestAnMCPServerIsDescribedOnceForManySpawnsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newMCPSource()
		src.gate = make(chan struct{})
		tf := mcpTree(t, src, map[string][]scripted.Step{"read...": {{Text: "read it"}}})
		const spawns = 6
		agents := make(chan *manager.Agent, spawns)
		for i := range spawns {
			go func() {
				a, err := tf.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "fsuser", Task: fmt.Sprintf("read %d", i)})
				assert.NoError(t, err)
				agents <- a
			}()
		}
		synctest.Wait() // every spawn waits: one on the server, the others on its description
		assert.Equal(t, 1, src.described("fs"), "concurrent first spawns share one description")
		close(src.gate)
		for range spawns {
			a := <-agents
			require.NotNil(t, a)
			res, err := a.Wait(context.Background())
			require.NoError(t, err)
			assert.Equal(t, manager.Completed, res.State, res.Error)
		}
		res := tf.run(t, manager.SpawnRequest{Type: "fsuser", Task: "read once more"})
		require.Equal(t, manager.Completed, res.State, res.Error)
		assert.Equal(t, 1, src.described("fs"), "described once per manager")
		for _, r := range requestsFor(tf.model, "read once more") {
			assert.Contains(t, r.Tools, "mcp__fs__read")
		}
	})
}

func TestAnUntrustedMCPServerFailsTheSpawnAndIsNeverDescribed(t *testing.T) {
	src := newMCPSource()
	tf := newTreeFixture(t, nil, func(c *manager.Config) { c.MCP = src })
	untrusted := fsServer
	untrusted.Untrusted = true
	require.NoError(t, tf.reg.RegisterType(agenttypes.Type{
		Name: "fsuser", Description: "reads through fs", Tools: []string{"echo", "mcp__fs__*"},
		MCPServers: []agenttypes.MCPServer{untrusted},
	}))
	_, err := tf.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "fsuser", Task: "read"})
	require.ErrorIs(t, err, agenttypes.ErrUntrusted)
	require.ErrorIs(t, err, manager.ErrMCPServer)
	assert.Contains(t, err.Error(), `MCP server "fs"`)
	assert.Contains(t, err.Error(), "project/.mcp.json")
	assert.Zero(t, src.described("fs"), "nothing is started for an untrusted server")
}

func TestAParentsRestrictionsPassDownToItsChildsMCPTools(t *testing.T) {
	src := newMCPSource()
	tf := mcpTree(t, src, map[string][]scripted.Step{
		"coordinate...": {
			delegateCall(agenttypes.DelegateRequest{Tasks: []agenttypes.ChildTask{{Label: "reader", Type: "fsuser", Prompt: "read the file"}}}),
			{Text: "done"},
		},
		"read the file": {{Text: "read it"}},
	})
	require.NoError(t, tf.reg.RegisterType(agenttypes.Type{
		Name: "wary", Description: "delegates, and keeps fs's delete from its subtree",
		Tools: []string{"delegate", "echo"}, DisallowedTools: []string{"mcp__fs__delete"},
	}))

	res := tf.run(t, manager.SpawnRequest{Type: "wary", Task: "coordinate (wary)"})
	require.Equal(t, manager.Completed, res.State, res.Error)
	child := requestsFor(tf.model, "read the file")
	require.Len(t, child, 1)
	assert.Contains(t, child[0].Tools, "mcp__fs__read")
	assert.NotContains(t, child[0].Tools, "mcp__fs__delete", "a child never gets a tool its parent disallows")

	res = tf.run(t, manager.SpawnRequest{Type: "lead", Task: "coordinate (narrowed)", Tools: []string{"delegate", "echo"}})
	require.Equal(t, manager.Completed, res.State, res.Error)
	child = requestsFor(tf.model, "read the file")
	require.Len(t, child, 2)
	assert.NotContains(t, child[1].Tools, "mcp__fs__read", "a parent narrowed by its task passes no more down")
	assert.Contains(t, child[1].Tools, "echo")
}

func TestToolsRegisteredAfterATypesFirstAgentReachItsNextOnes(t *testing.T) {
	model := scripted.New(scripted.Step{Text: "first"}, scripted.Step{Text: "second"}, scripted.Step{Text: "third"})
	f := newFixture(t, model, nil)
	require.NoError(t, f.reg.RegisterType(agenttypes.Type{
		Name: "ghuser", Description: "uses gh", Tools: []string{"echo", "mcp__gh__*"},
		MCPServers: []agenttypes.MCPServer{{Name: "gh", Command: "gh-server"}},
	}))
	res := f.run(t, manager.SpawnRequest{Type: "ghuser"})
	require.Equal(t, manager.Completed, res.State, res.Error)
	require.NoError(t, f.reg.RegisterTool(mcpTool("mcp__gh__issues")))
	res = f.run(t, manager.SpawnRequest{Type: "ghuser"})
	require.Equal(t, manager.Completed, res.State, res.Error)
	res = f.run(t, manager.SpawnRequest{Type: "ghuser", Tools: []string{"mcp__gh__issues"}})
	require.Equal(t, manager.Completed, res.State, res.Error)
	reqs := model.Requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, []string{"echo"}, reqs[0].Tools)
	assert.Equal(t, []string{"echo", "mcp__gh__issues"}, reqs[1].Tools, "the type's setup from before is not reused stale")
	assert.Equal(t, []string{"mcp__gh__issues"}, reqs[2].Tools)
}

func TestASpawnWaitingOnADescriptionItsDescriberGaveUpOnAsksAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newMCPSource()
		src.gate = make(chan struct{})
		tf := mcpTree(t, src, map[string][]scripted.Step{"read...": {{Text: "read it"}}})
		ctx, giveUp := context.WithCancel(context.Background())
		first := make(chan error, 1)
		go func() {
			_, err := tf.mgr.Spawn(ctx, manager.SpawnRequest{Type: "fsuser", Task: "read first"})
			first <- err
		}()
		synctest.Wait() // the first spawn describes fs
		second := make(chan *manager.Agent, 1)
		go func() {
			a, err := tf.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "fsuser", Task: "read second"})
			assert.NoError(t, err)
			second <- a
		}()
		synctest.Wait() // the second waits for that description
		require.Equal(t, 1, src.described("fs"))
		giveUp()
		require.ErrorIs(t, <-first, context.Canceled)
		synctest.Wait()
		assert.Equal(t, 2, src.described("fs"), "the waiting spawn describes the server itself")
		close(src.gate)
		a := <-second
		require.NotNil(t, a)
		res, err := a.Wait(context.Background())
		require.NoError(t, err)
		assert.Equal(t, manager.Completed, res.State, res.Error)
	})
}
