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
