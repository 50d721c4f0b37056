package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The MCP servers a project names (its .mcp.json, its config, its
// definitions) are programs the repository names: `troupe trust` lists
// each with what it runs, and a changed entry needs trust again. The
// user's own servers need none.
func TestTrustListsTheProjectsMCPServers(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(shop)))
	write := func(path, text string) {
		t.Helper()
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	}
	mcpJSON := filepath.Join(dir, ".mcp.json")
	write(mcpJSON, `{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]}}}`)
	write(filepath.Join(dir, ".troupe", "config.yaml"), "mcp_servers:\n  web: {type: http, url: \"http://127.0.0.1:3000/mcp\"}\n")
	write(filepath.Join(dir, ".troupe", "agents", "reader.yaml"),
		"name: reader\ndescription: Reads.\nmcp_servers:\n  - fs\n  - mine\n  - own: {command: ./bin/own-server, args: [--stdio]}\n")
	write(filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "troupe", "config.yaml"), "mcp_servers:\n  mine: {command: my-own-server}\n")

	o := troupe(t, "types", "list", "--repo", dir)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stderr, "what would run of it is left out: 3 MCP servers")
	assert.Regexp(t, `(?m)^reader\s`, o.stdout, "a type naming untrusted servers loads; starting them is refused")

	o = troupe(t, "trust", "--repo", dir)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Regexp(t, `(?m)^  mcp\s+fs\s+\.mcp\.json\s+runs: npx -y @modelcontextprotocol/server-filesystem \.$`, o.stdout)
	assert.Regexp(t, `(?m)^  mcp\s+web\s+\.troupe/config\.yaml\s+connects to http://127\.0\.0\.1:3000/mcp$`, o.stdout)
	assert.Regexp(t, `(?m)^  mcp\s+own\s+\.troupe/agents/reader\.yaml\s+runs: \./bin/own-server --stdio$`, o.stdout)
	assert.NotContains(t, o.stdout, "my-own-server", "the user's own server needs no trust")
	assert.Contains(t, o.stdout, "trusted "+dir+" (3 MCP servers)")

	o = troupe(t, "types", "list", "--repo", dir)
	require.Equal(t, 0, o.code, o.stderr)
	assert.NotContains(t, o.stderr, "trust")

	write(mcpJSON, `{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/"]}}}`)
	o = troupe(t, "types", "list", "--repo", dir)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stderr, "changed since you trusted it (mcp fs)")
}
