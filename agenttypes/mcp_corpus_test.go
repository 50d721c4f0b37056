package agenttypes_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

// The corpus files that name MCP tools, or give mcpServers, still load:
// their servers are declared nowhere troupe looks (Claude Code keeps them
// in the user's own settings), so each such tool is a warning naming it,
// and the agent runs without it.
func TestCorpusFilesNamingMCPServersLoad(t *testing.T) {
	if _, err := os.Stat(corpus); err != nil {
		t.Skipf("no corpus at %s: %v", corpus, err)
	}
	mcpTool := regexp.MustCompile(`(?m)^tools:.*\bmcp__`)
	mcpServers := regexp.MustCompile(`(?m)^mcpServers:`)
	var withTools, withServers int
	require.NoError(t, filepath.WalkDir(corpus, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") {
			return err
		}
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		front, _, _ := strings.Cut(strings.TrimPrefix(string(data), "---\n"), "\n---")
		tools, servers := mcpTool.MatchString(front), mcpServers.MatchString(front)
		if !tools && !servers {
			return nil
		}
		if tools {
			withTools++
		}
		if servers {
			withServers++
		}
		typ, diags := agenttypes.LoadFile(p, agenttypes.LoadOptions{Mode: agenttypes.ModeLenient})
		require.False(t, diags.HasErrors(), "%s:\n%s", p, diags)
		assert.Empty(t, typ.MCPServers, p)
		assert.Contains(t, diags.String(), "which is not declared", p)
		assert.Contains(t, diags.String(), "the agent runs without it", p)
		return nil
	}))
	t.Logf("%d corpus files name MCP tools in tools:, %d give mcpServers:", withTools, withServers)
	if withTools+withServers == 0 {
		t.Skip("the corpus names no MCP tools")
	}
}
