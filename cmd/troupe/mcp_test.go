package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

// testMCPServerEnv makes this test binary an MCP server over stdio with
// one tool, shout.
const testMCPServerEnv = "TROUPE_TEST_MCP_SERVER"

func serveTestMCP() {
	if starts := os.Getenv("TROUPE_TEST_MCP_STARTS"); starts != "" {
		f, err := os.OpenFile(starts, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			_, _ = f.WriteString("started\n")
			f.Close()
		}
	}
	s := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "shouter", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "shout", Description: "Says its text loudly."},
		func(_ context.Context, _ *mcpsdk.CallToolRequest, x in) (*mcpsdk.CallToolResult, any, error) {
			return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "SHOUTED: " + x.Text}}}, nil, nil
		})
	if err := s.Run(context.Background(), &mcpsdk.StdioTransport{}); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// mcpProject is the shop with a .mcp.json naming this binary as the
// server "loud", and a type that may use its tools.
func mcpProject(t *testing.T) string {
	repo, _ := mcpProjectCounting(t)
	return repo
}

// mcpProjectCounting is mcpProject whose server adds a line to the
// returned file each time it starts.
func mcpProjectCounting(t *testing.T) (repo, starts string) {
	t.Helper()
	repo = shopRepo(t)
	starts = filepath.Join(t.TempDir(), "starts")
	self, err := os.Executable()
	require.NoError(t, err)
	decl, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"loud": map[string]any{"command": self, "env": map[string]string{testMCPServerEnv: "1", "GORACE": "atexit_sleep_ms=0", "TROUPE_TEST_MCP_STARTS": starts}},
	}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".mcp.json"), decl, 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".troupe", "agents"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".troupe", "agents", "crier.yaml"),
		[]byte("name: crier\ndescription: Shouts.\ntools: [read, mcp__loud__*]\nmcp_servers: [loud]\n"), 0o644))
	return repo, starts
}

func TestATypesMCPServerIsRefusedUntilTheProjectIsTrusted(t *testing.T) {
	srv := newChatServer(t, `CALL mcp__loud__shout {"text":"hello"}`, "shouted")
	session(t, srv)
	repo := mcpProject(t)
	o := cmdIn(t, "run", "crier", "--model", "openai:m", "--repo", repo, "--progress", "none", "shout hello")
	assert.Equal(t, exitUsage, o.code, o.stderr)
	assert.Contains(t, o.stderr, `MCP server "loud"`)
	assert.Contains(t, o.stderr, ".mcp.json")
	assert.Contains(t, o.stderr, "troupe trust --repo")
	assert.Empty(t, srv.received(), "nothing ran")
}

func TestATrustedTypeCallsItsMCPServersToolThroughTheManager(t *testing.T) {
	srv := newChatServer(t, `CALL mcp__loud__shout {"text":"hello"}`, "shouted")
	session(t, srv)
	repo := mcpProject(t)
	trustRepo(t, repo)
	o := cmdIn(t, "run", "crier", "--model", "openai:m", "--repo", repo, "--progress", "plain", "shout hello")
	require.Equal(t, 0, o.code, o.stderr)
	bodies := srv.received()
	require.Len(t, bodies, 2)
	assert.Contains(t, bodies[0], `"name":"mcp__loud__shout"`, "the model is offered the server's tool")
	assert.Equal(t, "SHOUTED: hello", lastToolMessage(t, bodies[1]))
	assert.Contains(t, o.stderr, "→ mcp__loud__shout", "progress shows the call like any other")
}

func TestToolsListShowsAServersToolsSeenBeforeWithoutStartingIt(t *testing.T) {
	session(t, newChatServer(t, "nothing to shout"))
	repo, starts := mcpProjectCounting(t)
	trustRepo(t, repo)
	o := cmdIn(t, "tools", "list", "--type", "crier", "--repo", repo)
	require.Equal(t, 0, o.code, o.stderr)
	assert.NotContains(t, o.stdout, "mcp__loud__shout", "never described: listing starts nothing to learn it")
	assert.NoFileExists(t, starts)

	o = cmdIn(t, "run", "crier", "--model", "openai:m", "--repo", repo, "--progress", "none", "look")
	require.Equal(t, 0, o.code, o.stderr)
	data, err := os.ReadFile(starts)
	require.NoError(t, err)
	assert.Equal(t, "started\n", string(data), "the run described it, starting it once")

	o = cmdIn(t, "tools", "list", "--type", "crier", "--repo", repo)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, "mcp__loud__shout")
	assert.Contains(t, o.stdout, "Says its text loudly.")
	data, err = os.ReadFile(starts)
	require.NoError(t, err)
	assert.Equal(t, "started\n", string(data), "listing again starts nothing: the description is cached")
}

// A type the run's agent delegates to gets its MCP server's tools,
// though the delegating type names no server and nothing was described
// before: the server is described when the child is spawned.
func TestADelegatedTypeCallsItsMCPServersToolWithNothingDescribedBefore(t *testing.T) {
	requireDelegate(t)
	srv := newChatServer(t,
		`CALL delegate {"tasks":[{"label":"crier","type":"crier","prompt":"shout hello"}]}`,
		`CALL mcp__loud__shout {"text":"hello"}`,
		"shouted",
		"the crier shouted")
	session(t, srv)
	repo, starts := mcpProjectCounting(t)
	trustRepo(t, repo)
	cache, err := os.ReadDir(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "troupe", "mcp"))
	require.True(t, os.IsNotExist(err), "no description is cached: %v", cache)

	o := cmdIn(t, "run", "general", "--yes", "--model", "openai:m", "--repo", repo, "--progress", "plain", "have the crier shout hello")
	require.Equal(t, 0, o.code, o.stderr)
	bodies := srv.received()
	require.Equal(t, 4, len(bodies), "the parent's two turns and the child's")
	assert.NotContains(t, bodies[0], "mcp__loud__shout", "the delegating type names no MCP server")
	assert.Contains(t, bodies[1], `"name":"mcp__loud__shout"`, "the child is offered its server's tool")
	assert.Equal(t, "SHOUTED: hello", lastToolMessage(t, bodies[2]))
	assert.Contains(t, lastToolMessage(t, bodies[3]), "shouted", "the child's report reaches the parent")
	data, err := os.ReadFile(starts)
	require.NoError(t, err)
	assert.Equal(t, "started\n", string(data), "described and called through one start")
}

// A delegated type whose MCP server does not start fails its spawn; the
// parent's model is told which server, declared where.
func TestADelegatedTypeWhoseMCPServerDoesNotStartIsNamedToTheParent(t *testing.T) {
	requireDelegate(t)
	srv := newChatServer(t,
		`CALL delegate {"tasks":[{"label":"crier","type":"crier","prompt":"shout hello"}]}`,
		"the crier could not start")
	session(t, srv)
	repo := mcpProject(t)
	decl := `{"mcpServers":{"loud":{"command":"` + filepath.Join(t.TempDir(), "no-such-server") + `"}}}`
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".mcp.json"), []byte(decl), 0o644))
	trustRepo(t, repo)

	o := cmdIn(t, "run", "general", "--yes", "--model", "openai:m", "--repo", repo, "--progress", "none", "have the crier shout hello")
	require.Equal(t, 0, o.code, o.stderr)
	bodies := srv.received()
	require.Equal(t, 2, len(bodies), "the parent's two turns: the child never ran")
	told := lastToolMessage(t, bodies[1])
	assert.Contains(t, told, `MCP server "loud"`)
	assert.Contains(t, told, ".mcp.json")
}

// A delegated type whose MCP server the project's trust does not cover
// is refused at its spawn, never run without the server's tools.
func TestADelegatedTypesUntrustedMCPServerIsRefusedToTheParent(t *testing.T) {
	requireDelegate(t)
	srv := newChatServer(t,
		`CALL delegate {"tasks":[{"label":"crier","type":"crier","prompt":"shout hello"}]}`,
		"the crier was refused")
	session(t, srv)
	repo, starts := mcpProjectCounting(t)

	o := cmdIn(t, "run", "general", "--yes", "--model", "openai:m", "--repo", repo, "--progress", "none", "have the crier shout hello")
	require.Equal(t, 0, o.code, o.stderr)
	bodies := srv.received()
	require.Equal(t, 2, len(bodies), "the parent's two turns: the child never ran")
	told := lastToolMessage(t, bodies[1])
	assert.Contains(t, told, `MCP server "loud"`)
	assert.Contains(t, told, ".mcp.json")
	assert.Contains(t, told, agenttypes.ErrUntrusted.Error(), "the refusal says the server waits for trust")
	assert.NoFileExists(t, starts, "nothing started")
}

func TestARunWhoseMCPServerDoesNotStartFailsNamingItAndItsFile(t *testing.T) {
	srv := newChatServer(t, "never asked")
	session(t, srv)
	repo := mcpProject(t)
	decl := `{"mcpServers":{"loud":{"command":"` + filepath.Join(t.TempDir(), "no-such-server") + `"}}}`
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".mcp.json"), []byte(decl), 0o644))
	trustRepo(t, repo)

	o := cmdIn(t, "run", "crier", "--model", "openai:m", "--repo", repo, "--progress", "none", "shout hello")
	assert.Equal(t, exitFailed, o.code, o.stderr)
	assert.Contains(t, o.stderr, `MCP server "loud"`)
	assert.Contains(t, o.stderr, filepath.Join(repo, ".mcp.json"))
	assert.Empty(t, srv.received(), "no agent ran")
}
