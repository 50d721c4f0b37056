package agenttypes_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

func TestMCPToolNamesAreValidToolNamesAndStable(t *testing.T) {
	assert.Equal(t, "mcp__fs__read_file", agenttypes.MCPToolName("fs", "read_file"))
	long := agenttypes.MCPToolName("everything", strings.Repeat("very_long_tool_name_", 5))
	assert.Len(t, long, agenttypes.MaxToolName)
	assert.True(t, strings.HasPrefix(long, "mcp__everything__very_long_tool_name_"), "a readable prefix")
	assert.Equal(t, long, agenttypes.MCPToolName("everything", strings.Repeat("very_long_tool_name_", 5)), "the same every time")
	assert.NotEqual(t, long, agenttypes.MCPToolName("everything", strings.Repeat("very_long_tool_name_", 5)+"x"), "different tools, different names")

	dotted := agenttypes.MCPToolName("db", "query.run")
	assert.Regexp(t, `^[A-Za-z0-9_-]{1,64}$`, dotted, "only characters every provider accepts")
	assert.NotEqual(t, dotted, agenttypes.MCPToolName("db", "query_run"), "a replaced character does not make two tools one")
}

func TestMCPServerEntriesAreValidated(t *testing.T) {
	ok := []agenttypes.MCPServer{
		{Name: "fs", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "."}},
		{Name: "remote", Type: "http", URL: "http://127.0.0.1:3000/mcp"},
		{Name: "inferred", URL: "https://example.test/mcp"},
	}
	for _, s := range ok {
		require.NoError(t, s.Validate(), s.Name)
	}
	assert.Equal(t, agenttypes.MCPHTTP, ok[2].Transport(), "a url alone means HTTP")
	for _, tc := range []struct {
		s    agenttypes.MCPServer
		says string
	}{
		{agenttypes.MCPServer{Name: "a__b", Command: "x"}, "no \"__\""},
		{agenttypes.MCPServer{Name: "", Command: "x"}, "server name"},
		{agenttypes.MCPServer{Name: "x"}, "has no command"},
		{agenttypes.MCPServer{Name: "x", Type: "http", URL: "file:///etc/passwd"}, "not an http or https URL"},
		{agenttypes.MCPServer{Name: "x", Command: "y", URL: "http://h/"}, "both a command and a url"},
		{agenttypes.MCPServer{Name: "x", Type: "sse", URL: "http://h/"}, `use "stdio" or "http"`},
	} {
		err := tc.s.Validate()
		require.ErrorIs(t, err, agenttypes.ErrInvalid)
		assert.Contains(t, err.Error(), tc.says)
	}
}

func TestAnMCPServersDigestFollowsWhatRunsNotWhereItIsWritten(t *testing.T) {
	a := agenttypes.MCPServer{Name: "fs", Command: "npx", Args: []string{"a"}, Env: map[string]string{"B": "2", "A": "1"}, Source: "x/.mcp.json"}
	b := a
	b.Source = "y/.mcp.json"
	b.Env = map[string]string{"A": "1", "B": "2"}
	assert.Equal(t, a.Digest(), b.Digest())
	b.Args = []string{"b"}
	assert.NotEqual(t, a.Digest(), b.Digest(), "another argument is another program run")
}
