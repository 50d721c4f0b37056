package agenttypes_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

// loadType loads the project and user files given (see mcpProject) and
// returns the type called name, and every diagnostic.
func loadType(t *testing.T, src agenttypes.Sources, name string) (agenttypes.Type, agenttypes.Diagnostics) {
	t.Helper()
	types, diags := agenttypes.Load(nil, src)
	i := slices.IndexFunc(types, func(typ agenttypes.Type) bool { return typ.Name == name })
	if i < 0 {
		return agenttypes.Type{}, diags
	}
	return types[i], diags
}

func serverNames(typ agenttypes.Type) []string {
	var out []string
	for _, s := range typ.MCPServers {
		out = append(out, s.Name)
	}
	return out
}

const declared = `{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]}, "web": {"type": "http", "url": "http://127.0.0.1:3000/mcp"}}}`

func TestADefinitionNamesMCPServersResolvedProjectOverUser(t *testing.T) {
	src := mcpProject(t, map[string]string{
		".mcp.json":        declared,
		"user:config.yaml": "mcp_servers:\n  fs: {command: user-fs}\n  mine: {command: my-server}\n",
		".troupe/agents/reader.yaml": "name: reader\ndescription: Reads.\nmcp_servers: [fs, mine]\n" +
			"tools: [read, mcp__fs__read_file, mcp__mine__*]\n",
		".troupe/agents/inline.yaml": "name: inline\ndescription: Inline.\nmcp_servers:\n  - fs\n  - own: {command: ./tools/own-server, args: [--stdio]}\n",
	})
	src.TrustProject = agenttypes.TrustAll
	reader, diags := loadType(t, src, "reader")
	require.False(t, diags.HasErrors(), diags.String())
	assert.Equal(t, []string{"fs", "mine"}, serverNames(reader))
	assert.Equal(t, "npx", reader.MCPServers[0].Command, "the project's declaration over the user's")
	assert.Equal(t, "my-server", reader.MCPServers[1].Command)
	assert.Equal(t, []string{"read", "mcp__fs__read_file", "mcp__mine__*"}, reader.Tools)

	inline, _ := loadType(t, src, "inline")
	assert.Equal(t, []string{"fs", "own"}, serverNames(inline))
	assert.Equal(t, filepath.Join(src.ProjectDir, ".troupe", "agents", "inline.yaml"), inline.MCPServers[1].Source)
	assert.Equal(t, []string{"--stdio"}, inline.MCPServers[1].Args)
	assert.Contains(t, inline.Tools, "mcp__fs__*", "servers named without a tools list give their tools")
	assert.Contains(t, inline.Tools, "mcp__own__*")
	assert.True(t, inline.Allows("mcp__own__anything"))
}

func TestAnUnknownMCPServerIsAnErrorNamingItAndTheFile(t *testing.T) {
	for _, tc := range []struct{ file, text, says string }{
		{".troupe/agents/a.yaml", "name: a\ndescription: A.\nmcp_servers: [fz]\n", `a.yaml:3:15: unknown MCP server "fz": declare it in the project's .mcp.json`},
		{".troupe/agents/a.yaml", "name: a\ndescription: A.\nmcp_servers: [fz]\n", `did you mean "fs"?`},
		{".troupe/agents/a.yaml", "name: a\ndescription: A.\ntools: [read, mcp__gh__create_issue]\n", `a.yaml:3:15: tool "mcp__gh__create_issue" is a tool of MCP server "gh", which is not declared`},
		{".claude/agents/a.md", "---\nname: a\ndescription: A.\nmcpServers:\n  - nothere\n---\nPrompt.\n", `a.md:5:5: unknown MCP server "nothere"`},
		{".troupe/agents/a.yaml", "name: a\ndescription: A.\nmcp_servers: [fs, fs]\n", `MCP server "fs" is named twice`},
		{".troupe/agents/a.yaml", "name: a\ndescription: A.\ntools: [mcp__]\n", `tool "mcp__" is not an MCP tool name`},
		{".troupe/agents/a.yaml", "name: a\ndescription: A.\nmcp_servers: {x: {type: sse, url: \"http://h/sse\"}}\n", `type sse (the old HTTP+SSE transport) is not supported`},
	} {
		t.Run(tc.says, func(t *testing.T) {
			src := mcpProject(t, map[string]string{".mcp.json": declared, tc.file: tc.text})
			typ, diags := loadType(t, src, "a")
			assert.Contains(t, diags.Errors().String(), tc.says)
			assert.Empty(t, typ.Name, "a definition naming an unknown server does not load")
		})
	}
}

func TestClaudeCodeMCPServersFrontMatterWorksUnchanged(t *testing.T) {
	src := mcpProject(t, map[string]string{
		".mcp.json": declared,
		".claude/agents/researcher.md": "---\nname: researcher\ndescription: Researches.\ntools: Read, Grep, mcp__fs__read_file, mcp__web\n" +
			"mcpServers:\n  - fs\n  - notes:\n      command: notes-server\n      args: [\"--db\", \"notes.db\"]\n---\nYou research.\n",
		".claude/agents/implied.md": "---\nname: implied\ndescription: Uses a declared server.\ntools: Read, mcp__web__fetch\n---\nYou fetch.\n",
		".claude/agents/obj.md":     "---\nname: obj\ndescription: Object form.\nmcpServers:\n  fs:\n  scratch: {command: scratch}\n---\nYou.\n",
	})
	src.TrustProject = agenttypes.TrustAll
	r, diags := loadType(t, src, "researcher")
	require.False(t, diags.HasErrors(), diags.String())
	assert.Equal(t, []string{"fs", "notes", "web"}, serverNames(r), "a tool of a declared server brings it, as Claude Code's session would")
	assert.Equal(t, []string{"read", "grep", "mcp__fs__read_file", "mcp__web__*"}, r.Tools, "mcp__SERVER is every tool of SERVER")
	assert.True(t, r.Allows("mcp__web__fetch"))
	assert.False(t, r.Allows("mcp__fs__write_file"))
	assert.Contains(t, diags.String(), `MCP server "notes" is named, but tools allows none of its tools`)

	imp, _ := loadType(t, src, "implied")
	assert.Equal(t, []string{"web"}, serverNames(imp))
	obj, _ := loadType(t, src, "obj")
	assert.Equal(t, []string{"fs", "scratch"}, serverNames(obj))
}

func TestMCPToolPatternsAllowAndRefuse(t *testing.T) {
	src := mcpProject(t, map[string]string{
		".mcp.json": declared,
		".troupe/agents/a.yaml": "name: a\ndescription: A.\ntools: [read, mcp__fs__*]\n" +
			"disallowed_tools: [mcp__fs__write_file, read]\n",
		".troupe/agents/b.yaml": "name: b\ndescription: B.\nextends: a\nmcp_servers: [web]\n",
	})
	src.TrustProject = agenttypes.TrustAll
	a, diags := loadType(t, src, "a")
	require.False(t, diags.HasErrors(), diags.String())
	assert.Equal(t, []string{"mcp__fs__*"}, a.Tools)
	assert.Equal(t, []string{"mcp__fs__write_file"}, a.DisallowedTools)
	for tool, want := range map[string]bool{
		"mcp__fs__read_file": true, "mcp__fs__write_file": false, "mcp__fs__*": true,
		"mcp__fsx__read_file": false, "mcp__web__fetch": false, "read": false,
	} {
		assert.Equal(t, want, a.Allows(tool), tool)
	}
	b, diags := loadType(t, src, "b")
	require.False(t, diags.HasErrors(), diags.String())
	assert.Equal(t, []string{"web"}, serverNames(b), "mcp_servers replaces the parent's")
	assert.Equal(t, []string{"mcp__web__*"}, b.Tools, "the parent's fs tools go with fs")
	assert.Contains(t, diags.String(), `tool "mcp__fs__*" of the type this one extends is dropped`)
}

func TestMatchTool(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"read", "read", true},
		{"read", "grep", false},
		{"mcp__fs__*", "mcp__fs__read_file", true},
		{"mcp__fs", "mcp__fs__read_file", true},
		{"mcp__fs__*", "mcp__fs_x__read_file", false},
		{"mcp__fs__read_file", "mcp__fs__read_file", true},
		{"mcp__fs__read_file", "mcp__fs__read_files", false},
		{"mcp__fs__read_*", "mcp__fs__read_file", false},
		{"*", "read", false},
		{"mcp__fs__*", agenttypes.MCPToolName("fs", strings.Repeat("long_", 20)), true},
	} {
		assert.Equal(t, tc.want, agenttypes.MatchTool(tc.pattern, tc.name), "%s ~ %s", tc.pattern, tc.name)
	}
}

func TestUntrustedProjectMCPServersAreMarkedAndTheUsersAreNot(t *testing.T) {
	src := mcpProject(t, map[string]string{
		".mcp.json":        declared,
		"user:config.yaml": "mcp_servers:\n  mine: {command: my-server}\n",
		".troupe/agents/a.yaml": "name: a\ndescription: A.\nmcp_servers:\n  - fs\n  - mine\n" +
			"  - own: {command: own-server}\n",
	})
	a, diags := loadType(t, src, "a")
	require.False(t, diags.HasErrors(), diags.String())
	var untrusted []string
	for _, s := range a.UntrustedMCPServers() {
		untrusted = append(untrusted, s.Name)
	}
	assert.Equal(t, []string{"fs", "own"}, untrusted, "what the project names waits for trust; the user's own server does not")
	err := a.UntrustedMCPServers()[0].UntrustedError()
	require.ErrorIs(t, err, agenttypes.ErrUntrusted)
	assert.Contains(t, err.Error(), `MCP server "fs" (`+filepath.Join(src.ProjectDir, ".mcp.json")+`) is withheld until the project is trusted (it runs: npx -y @modelcontextprotocol/server-filesystem .)`)

	// Trusting exactly the grants troupe trust lists makes them usable.
	grants := agenttypes.Grants(nil, src)
	src.TrustProject = func(g agenttypes.Grant) bool { return slices.Contains(grants, g) }
	a, _ = loadType(t, src, "a")
	assert.Empty(t, a.UntrustedMCPServers())
}

func TestMCPGrantsNameWhatRunsAndChangeWithTheEntry(t *testing.T) {
	files := map[string]string{
		".mcp.json":             declared,
		".troupe/agents/a.yaml": "name: a\ndescription: A.\nmcp_servers:\n  own: {command: own-server, args: [--x]}\n",
		"user:config.yaml":      "mcp_servers:\n  mine: {command: my-server}\n",
	}
	src := mcpProject(t, files)
	mcpGrants := func() map[string]agenttypes.Grant {
		out := map[string]agenttypes.Grant{}
		for _, g := range agenttypes.Grants(nil, src) {
			if g.Kind == agenttypes.GrantMCP {
				out[g.Type] = g
			}
		}
		return out
	}
	before := mcpGrants()
	require.Len(t, before, 3, "fs and web of .mcp.json, own of the definition; the user's mine needs no trust")
	assert.Equal(t, "runs: own-server --x", before["own"].Detail)
	assert.Equal(t, filepath.Join(src.ProjectDir, ".troupe", "agents", "a.yaml"), before["own"].File)
	assert.Equal(t, "connects to http://127.0.0.1:3000/mcp", before["web"].Detail)

	writeFile(t, filepath.Join(src.ProjectDir, ".mcp.json"), strings.Replace(declared, `"."]`, `"/"]`, 1))
	after := mcpGrants()
	assert.NotEqual(t, before["fs"].Digest, after["fs"].Digest, "another argument: asked again")
	assert.Equal(t, before["web"].Digest, after["web"].Digest, "an unchanged entry keeps its trust")
	assert.Equal(t, before["own"].Digest, after["own"].Digest)
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
}
