package agenttypes_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

// mcpProject is a project directory and a user config directory, with
// the files given written into them (paths relative to the project, or
// to the user config directory when they start with "user:").
func mcpProject(t *testing.T, files map[string]string) agenttypes.Sources {
	t.Helper()
	src := agenttypes.Sources{ProjectDir: t.TempDir(), UserConfigDir: t.TempDir()}
	for name, text := range files {
		path := filepath.Join(src.ProjectDir, name)
		if rest, ok := strings.CutPrefix(name, "user:"); ok {
			path = filepath.Join(src.UserConfigDir, "troupe", rest)
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	}
	return src
}

func TestMCPDeclarationsAreReadFromMCPJSONAndConfigs(t *testing.T) {
	src := mcpProject(t, map[string]string{
		".mcp.json": "{\n\t\"mcpServers\": {\n\t\t\"fs\": {\"command\": \"npx\", \"args\": [\"-y\", \"@modelcontextprotocol/server-filesystem\", \".\"], \"env\": {\"LOG\": \"debug\"}},\n" +
			"\t\t\"remote\": {\"type\": \"http\", \"url\": \"http:\\/\\/127.0.0.1:3000\\/mcp\", \"headers\": {\"Authorization\": \"Bearer ${TOKEN}\"}},\n" +
			"\t\t\"plain\": {\"type\": \"stdio\", \"command\": \"server\"}\n\t}\n}\n",
		".troupe/config.yaml":  "mcp_servers:\n  plain: {command: ./bin/project-server}\n",
		"user:config.yaml":     "mcp_servers:\n  fs: {command: user-fs}\n  mine: {command: my-server, args: [--quiet]}\n",
		".claude/agents/x.txt": "",
	})
	decl, diags := agenttypes.ReadMCPDeclarations(src)
	require.False(t, diags.HasErrors(), diags.String())
	assert.Equal(t, []string{"fs", "mine", "plain", "remote"}, decl.Names())

	fs, ok := decl.Lookup("fs")
	require.True(t, ok)
	assert.Equal(t, "npx", fs.Command, "the project's .mcp.json over the user's config")
	assert.Equal(t, filepath.Join(src.ProjectDir, ".mcp.json"), fs.Source)
	assert.Equal(t, map[string]string{"LOG": "debug"}, fs.Env)
	remote, _ := decl.Lookup("remote")
	assert.Equal(t, "http://127.0.0.1:3000/mcp", remote.URL, "JSON's \\/ escape is read")
	assert.Equal(t, "Bearer ${TOKEN}", remote.Headers["Authorization"])
	plain, _ := decl.Lookup("plain")
	assert.Equal(t, "./bin/project-server", plain.Command, "the project's config over its .mcp.json")
	// A file with JSON's \/ is read from its values again, without
	// places.
	assert.Contains(t, diags.String(), `.mcp.json: warning: MCP server "plain" is also declared in `+filepath.Join(src.ProjectDir, ".troupe", "config.yaml"))

	var granted []string
	for _, g := range decl.Grants() {
		assert.Equal(t, agenttypes.GrantMCP, g.Kind)
		granted = append(granted, g.Type+" "+g.Detail)
	}
	assert.Equal(t, []string{
		"fs runs: npx -y @modelcontextprotocol/server-filesystem . with LOG set",
		"plain runs: ./bin/project-server",
		"remote connects to http://127.0.0.1:3000/mcp",
	}, granted, "the project's servers need trust; the user's own do not")
}

func TestMCPDeclarationProblemsSayWhere(t *testing.T) {
	for _, tc := range []struct {
		name, file, text, says string
	}{
		{"json syntax", ".mcp.json", "{\n  \"mcpServers\": {\n    \"fs\": {\"command\": \"npx\",}\n  }\n}\n", ".mcp.json:3:30: not valid JSON"},
		{"json not an object", ".mcp.json", "[1]", ".mcp.json:1:1: the file is a JSON object"},
		{"sse refused", ".mcp.json", "{\"mcpServers\": {\n  \"old\": {\"type\": \"sse\", \"url\": \"http://127.0.0.1:1/sse\"}}}", ".mcp.json:2:10: mcpServers.old: type sse (the old HTTP+SSE transport) is not supported; troupe speaks streamable HTTP"},
		{"json unknown field warns", ".mcp.json", "{\"mcpServers\": {\"fs\": {\"command\": \"npx\", \"cwd\": \"x\"}}}", `.mcp.json:1:42: warning: mcpServers.fs: troupe does not know the field "cwd", and ignores it`},
		{"config unknown field", ".troupe/config.yaml", "mcp_servers:\n  fs: {command: npx, argz: [a]}\n", `config.yaml:2:22: mcp_servers.fs: unknown field "argz"; did you mean "args"?`},
		{"bad name", ".troupe/config.yaml", "mcp_servers:\n  a__b: {command: x}\n", `config.yaml:2:3: mcp_servers: server name "a__b"`},
		{"no command", ".troupe/config.yaml", "mcp_servers:\n  fs: {args: [a]}\n", `config.yaml:2:7: mcp_servers.fs: MCP server "fs" has no command`},
		{"args not a list", ".troupe/config.yaml", "mcp_servers:\n  fs: {command: x, args: a}\n", `config.yaml:2:26: mcp_servers.fs.args is a list of arguments`},
		{"too many args", ".troupe/config.yaml", "mcp_servers:\n  fs: {command: x, args: [" + strings.Repeat("a, ", agenttypes.MaxMCPArgs) + "a]}\n", "keep it to 64"},
		{"long value", ".troupe/config.yaml", "mcp_servers:\n  fs: {command: " + strings.Repeat("x", agenttypes.MaxMCPValue+1) + "}\n", "mcp_servers.fs.command is 4097 bytes long; keep it to 4096"},
		{"not a mapping", ".troupe/config.yaml", "mcp_servers: [fs]\n", `config.yaml:1:14: mcp_servers is a mapping of server names to entries`},
		{"file url", "user:config.yaml", "mcp_servers:\n  x: {type: http, url: \"file:///etc/passwd\"}\n", `not an http or https URL`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := mcpProject(t, map[string]string{tc.file: tc.text})
			_, diags := agenttypes.ReadMCPDeclarations(src)
			assert.Contains(t, diags.String(), tc.says)
		})
	}
}

func TestManyMCPDeclarationsAreRefusedPastTheBound(t *testing.T) {
	var b strings.Builder
	b.WriteString("mcp_servers:\n")
	for i := range agenttypes.MaxMCPServers + 1 {
		b.WriteString("  s" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ": {command: x}\n")
	}
	src := mcpProject(t, map[string]string{".troupe/config.yaml": b.String()})
	decl, diags := agenttypes.ReadMCPDeclarations(src)
	assert.Contains(t, diags.String(), "declares more than 32 servers")
	assert.Len(t, decl.Names(), agenttypes.MaxMCPServers)
}
