package workspace_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

// An Open that fails once the worktree is made, or while git makes it,
// leaves no worktree, branch or record.
func TestOpenFailureLeavesNothing(t *testing.T) {
	t.Run("git cannot make the branch", func(t *testing.T) {
		repo, state := newRepo(t), t.TempDir()
		// A branch named like the run blocks every branch below it.
		gitIn(t, repo, "branch", "troupe/run-1")
		p := newProviderAt(t, state)
		_, err := p.Open(context.Background(), agenttypes.WorkspaceRequest{Run: "run-1", Agent: "a", Dir: repo})
		require.ErrorIs(t, err, agenttypes.ErrWorkspace)
		assert.Contains(t, err.Error(), "making the worktree")
		assert.Equal(t, []string{"troupe/run-1"}, branches(t, repo))
		assert.Equal(t, []string{realPath(t, repo)}, worktrees(t, repo))
		assertNothingLeft(t, state)
	})
	t.Run("a setup command cannot run", func(t *testing.T) {
		repo, state := newRepo(t), t.TempDir()
		p := newProviderAt(t, state)
		_, err := p.Open(context.Background(), agenttypes.WorkspaceRequest{
			Run: "run-1", Agent: "a", Dir: repo, Setup: []string{"go mod download"},
			Policy: agenttypes.RunPolicy{Allow: []string{"go mod"}},
		})
		require.ErrorIs(t, err, agenttypes.ErrWorkspace)
		require.ErrorIs(t, err, agenttypes.ErrRunRefused)
		assert.Contains(t, err.Error(), `setup command "go mod download"`)
		assert.Empty(t, branches(t, repo))
		assert.Equal(t, []string{realPath(t, repo)}, worktrees(t, repo))
		assertNothingLeft(t, state)
	})
	t.Run("a parent that is not a workspace of this package", func(t *testing.T) {
		repo, state := newRepo(t), t.TempDir()
		p := newProviderAt(t, state)
		_, err := p.Open(context.Background(), agenttypes.WorkspaceRequest{Agent: "a", Dir: repo, Parent: foreign{}})
		require.ErrorIs(t, err, agenttypes.ErrWorkspace)
		assert.Contains(t, err.Error(), "not one this package made")
		assertNothingLeft(t, state)
	})
}

type foreign struct{ agenttypes.Workspace }

// Names are unique: the same run and agent again get a branch of their
// own.
func TestNamesAreUnique(t *testing.T) {
	repo := newRepo(t)
	p := newProvider(t)
	a := open(t, p, repo, "agent", nil)
	b := open(t, p, repo, "agent", nil)
	assert.Equal(t, "troupe/run-1/agent", a.Branch())
	assert.Equal(t, "troupe/run-1/agent-2", b.Branch())
	write(t, a.Dir(), "a.txt", "a\n")
	write(t, b.Dir(), "b.txt", "b\n")
	closeWS(t, a)
	closeWS(t, b)
	c := open(t, p, repo, "agent", nil)
	assert.Equal(t, "troupe/run-1/agent-3", c.Branch(), "a closed workspace's branch holds its work, so its name is taken")
	closeWS(t, c)
	again := open(t, p, repo, "agent", nil)
	assert.Equal(t, "troupe/run-1/agent-3", again.Branch(), "c changed nothing: its branch went with it, and its name is free")
	closeWS(t, again)

	// IDs are shortened and made valid ref names.
	ws, err := p.Open(context.Background(), agenttypes.WorkspaceRequest{
		Run: "0b7c9a1e-5f3d-4c2a-9e8b-1a2b3c4d5e6f", Agent: "..x y@{z}~^:?*[\\", Dir: repo})
	require.NoError(t, err)
	d := ws.(interface{ Branch() string })
	assert.Equal(t, "troupe/0b7c9a1e/x-y-z", d.Branch())
	closeWS(t, ws)
}

// The agent works in the same subdirectory of its workspace as it was
// asked to work in, and changes are relative to the repository's top.
func TestOpenInASubdirectory(t *testing.T) {
	repo := newRepo(t)
	p := newProvider(t)
	w := open(t, p, filepath.Join(repo, "sub"), "a", nil)
	assert.Equal(t, "sub", filepath.Base(w.Dir()))
	assert.Equal(t, "s\n", read(t, w.Dir(), "s.txt"))
	write(t, w.Dir(), "t.txt", "t\n")

	child := open(t, p, w.Dir(), "child", w)
	assert.Equal(t, "sub", filepath.Base(child.Dir()))
	assert.Equal(t, "t\n", read(t, child.Dir(), "t.txt"))
	closeWS(t, child)

	ch := closeWS(t, w)
	assert.Equal(t, []string{"sub/t.txt"}, ch.Added)
}

// A state directory inside the project would put workspaces in the
// user's tree: refused.
func TestOpenRefusesAStateDirectoryInsideTheProject(t *testing.T) {
	repo := newRepo(t)
	p := newProviderAt(t, filepath.Join(repo, "build", "state"))
	_, err := p.Open(context.Background(), agenttypes.WorkspaceRequest{Agent: "a", Dir: filepath.Join(repo, "sub")})
	require.ErrorIs(t, err, agenttypes.ErrWorkspace)
	assert.Contains(t, err.Error(), "is inside the project")
	assert.Empty(t, branches(t, repo))
}
