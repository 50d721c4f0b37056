//go:build integration

package mcp_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/mcp"
	"github.com/troupe-dev/troupe/builtin/process"
	"github.com/troupe-dev/troupe/builtin/tools"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

// These tests speak to real MCP servers installed from npm by pinned
// version (.ci/mcp-servers; make integration installs them and names
// their bin directory in TROUPE_MCP_SERVERS_BIN).

func serverBin(t *testing.T, name string) string {
	t.Helper()
	dir := os.Getenv("TROUPE_MCP_SERVERS_BIN")
	if dir == "" {
		t.Fatal("TROUPE_MCP_SERVERS_BIN is not set: run these tests with make integration, which installs the servers")
	}
	path := filepath.Join(dir, name)
	_, err := os.Stat(path)
	require.NoError(t, err, "make integration installs %s", name)
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("the npm MCP servers need node on PATH")
	}
	return path
}

func realPool(t *testing.T, servers ...agenttypes.MCPServer) *mcp.Pool {
	t.Helper()
	pool, err := mcp.NewPool(mcp.Config{Servers: servers, CacheDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, pool.Close(ctx))
	})
	return pool
}

func realTool(t *testing.T, tools []agenttypes.Tool, name string) agenttypes.Tool {
	t.Helper()
	var names []string
	for _, tl := range tools {
		if tl.Spec().Name == name {
			return tl
		}
		names = append(names, tl.Spec().Name)
	}
	t.Fatalf("no tool %s among %s", name, strings.Join(names, ", "))
	return nil
}

func TestIntegrationTheFilesystemServerReadsAFileOverStdio(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("the answer is 42\n"), 0o644))
	real, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	pool := realPool(t, agenttypes.MCPServer{Name: "fs", Command: serverBin(t, "mcp-server-filesystem"), Args: []string{real}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tools, err := pool.Tools(ctx, "fs")
	require.NoError(t, err)
	read := realTool(t, tools, "mcp__fs__read_text_file")
	out, err := read.Call(ctx, []byte(`{"path":"`+filepath.Join(real, "notes.txt")+`"}`))
	require.NoError(t, err)
	assert.Contains(t, out, "the answer is 42")

	_, err = read.Call(ctx, []byte(`{"path":42}`))
	require.ErrorIs(t, err, mcp.ErrInvalidArguments, "arguments are checked against the server's schema first")
}

func TestIntegrationTheEverythingServerEchoesOverStdio(t *testing.T) {
	pool := realPool(t, agenttypes.MCPServer{Name: "everything", Command: serverBin(t, "mcp-server-everything"), Args: []string{"stdio"}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tools, err := pool.Tools(ctx, "everything")
	require.NoError(t, err)
	out, err := realTool(t, tools, "mcp__everything__echo").Call(ctx, []byte(`{"message":"hello from troupe"}`))
	require.NoError(t, err)
	assert.Contains(t, out, "hello from troupe")
}

func TestIntegrationABudgetStopsALoopOfMCPCalls(t *testing.T) {
	pool := realPool(t, agenttypes.MCPServer{Name: "everything", Command: serverBin(t, "mcp-server-everything"), Args: []string{"stdio"}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tools, err := pool.Tools(ctx, "everything")
	require.NoError(t, err)
	reg := agenttypes.NewRegistry()
	for _, tl := range tools {
		require.NoError(t, reg.RegisterTool(tl))
	}
	require.NoError(t, reg.RegisterType(agenttypes.Type{
		Name: "looper", Description: "echoes forever", Tools: []string{"mcp__everything__*"},
		MCPServers: []agenttypes.MCPServer{{Name: "everything", Command: "x"}},
	}))
	again := scripted.Step{Calls: []scripted.Call{{Name: "mcp__everything__echo", Args: `{"message":"again"}`}}}
	steps := make([]scripted.Step, 20)
	for i := range steps {
		steps[i] = again
	}
	mgr, err := manager.New(manager.Config{Registry: reg, DefaultModel: "s",
		Models: manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return scripted.New(steps...), nil })})
	require.NoError(t, err)
	defer mgr.Close(context.Background())
	a, err := mgr.Spawn(ctx, manager.SpawnRequest{Type: "looper", Task: "echo", Budget: agenttypes.Budget{MaxToolCalls: 3}})
	require.NoError(t, err)
	res, err := a.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, manager.ReasonBudgetToolCalls, res.Reason)
	assert.Equal(t, 3, res.ToolCalls, "MCP calls count against the tool-call budget like any tool's")
}

// everythingOverHTTP starts the everything server's streamable HTTP
// transport on a free loopback port and returns its endpoint once it
// answers; the server and all it started are killed when the test ends.
func everythingOverHTTP(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	require.NoError(t, l.Close())
	cmd := exec.Command(serverBin(t, "mcp-server-everything"), "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+port)
	process.Contain(cmd)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = process.KillGroup(cmd.Process.Pid)
		_ = cmd.Wait()
	})
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 30*time.Second, 20*time.Millisecond, "the everything server listens")
	return "http://127.0.0.1:" + port + "/mcp"
}

func TestIntegrationTheEverythingServerEchoesOverStreamableHTTP(t *testing.T) {
	pool := realPool(t, agenttypes.MCPServer{Name: "remote", Type: agenttypes.MCPHTTP, URL: everythingOverHTTP(t)})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tools, err := pool.Tools(ctx, "remote")
	require.NoError(t, err)
	out, err := realTool(t, tools, "mcp__remote__echo").Call(ctx, []byte(`{"message":"over http"}`))
	require.NoError(t, err)
	assert.Contains(t, out, "over http")
}

// A type the scripted lead delegates to names the filesystem server,
// which the lead's type does not: the manager describes the server when
// the child is spawned, and the child reads a file through it.
func TestIntegrationADelegatedTypeReadsAFileThroughTheFilesystemServer(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("the answer is 42\n"), 0o644))
	real, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	fs := agenttypes.MCPServer{Name: "fs", Command: serverBin(t, "mcp-server-filesystem"), Args: []string{real}, Source: "project/.mcp.json"}
	pool := realPool(t, fs)
	reg := agenttypes.NewRegistry()
	require.NoError(t, reg.RegisterTool(tools.Delegate()))
	require.NoError(t, reg.RegisterType(agenttypes.Type{Name: "lead", Description: "delegates", Tools: []string{"delegate"}}))
	require.NoError(t, reg.RegisterType(agenttypes.Type{
		Name: "reader", Description: "reads through fs", Tools: []string{"mcp__fs__read_text_file"}, MCPServers: []agenttypes.MCPServer{fs},
	}))
	read := `{"path":"` + filepath.Join(real, "notes.txt") + `"}`
	// Each conversation plays its own turns: the lead's, or the child's.
	lead := []scripted.Step{
		{Calls: []scripted.Call{{Name: "delegate", Args: `{"tasks":[{"label":"reader","type":"reader","prompt":"read the notes"}]}`}}},
		{Text: "done"},
	}
	child := []scripted.Step{{Calls: []scripted.Call{{Name: "mcp__fs__read_text_file", Args: read}}}, {Text: "read them"}}
	turns := make([]scripted.Step, 2)
	for turn := range turns {
		turns[turn] = scripted.Step{Func: func(_ context.Context, msgs []llms.MessageContent) scripted.Step {
			if scripted.Text(msgs[1]) == "read the notes" {
				return child[turn]
			}
			return lead[turn]
		}}
	}
	model := scripted.New(turns...)
	mgr, err := manager.New(manager.Config{Registry: reg, MCP: pool, DefaultModel: "s", MaxConcurrent: 1,
		Models: manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil })})
	require.NoError(t, err)
	defer mgr.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := mgr.Spawn(ctx, manager.SpawnRequest{Type: "lead", Task: "have the notes read"})
	require.NoError(t, err)
	res, err := a.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, manager.Completed, res.State, res.Error)
	var childReqs []scripted.Request
	for _, r := range model.Requests() {
		if scripted.Text(r.Messages[1]) == "read the notes" {
			childReqs = append(childReqs, r)
		} else {
			assert.Equal(t, []string{"delegate"}, r.Tools, "the lead's type names no server")
		}
	}
	require.Len(t, childReqs, 2)
	assert.Contains(t, childReqs[0].Tools, "mcp__fs__read_text_file")
	results := scripted.ToolResults(childReqs[1].Messages)
	require.Len(t, results, 1)
	assert.Contains(t, results[0].Content, "the answer is 42")
}

// A type restricted to some of a server's tools is refused the others,
// through the manager, like any tool it is not given: the server never
// sees the call, and the file it would write is not written.
func TestIntegrationARestrictedTypeIsRefusedAServersTool(t *testing.T) {
	dir := t.TempDir()
	real, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	entry := agenttypes.MCPServer{Name: "fs", Command: serverBin(t, "mcp-server-filesystem"), Args: []string{real}}
	pool := realPool(t, entry)
	reg := agenttypes.NewRegistry()
	require.NoError(t, reg.RegisterType(agenttypes.Type{
		Name: "reader", Description: "reads, never writes", Tools: []string{"mcp__fs__*"},
		DisallowedTools: []string{"mcp__fs__write_file", "mcp__fs__edit_file"},
		MCPServers:      []agenttypes.MCPServer{entry},
	}))
	target := filepath.Join(real, "written.txt")
	model := scripted.New(
		scripted.Step{Calls: []scripted.Call{{Name: "mcp__fs__write_file", Args: `{"path":"` + target + `","content":"x"}`}}},
		scripted.Step{Text: "could not write"},
	)
	mgr, err := manager.New(manager.Config{Registry: reg, MCP: pool, DefaultModel: "s",
		Models: manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil })})
	require.NoError(t, err)
	defer mgr.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := mgr.Spawn(ctx, manager.SpawnRequest{Type: "reader", Task: "write a file"})
	require.NoError(t, err)
	res, err := a.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, manager.Completed, res.State, res.Error)

	offered := model.Requests()[0].Tools
	assert.Contains(t, offered, "mcp__fs__read_text_file", "the server's other tools are offered")
	assert.NotContains(t, offered, "mcp__fs__write_file", "a disallowed tool is not offered")
	told := scripted.ToolResults(model.Requests()[1].Messages)
	require.Len(t, told, 1)
	assert.Contains(t, told[0].Content, `tool "mcp__fs__write_file" is not available to this agent`, "the model is told it may not call it")
	assert.NoFileExists(t, target, "the server never saw the call")
}
