package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/workspace"
)

// Discard deletes the changes' branch and patch and nothing else of the
// user's; a second Discard finds nothing to do; the changes no longer
// apply.
func TestDiscardRemovesTheBranchAndPatch(t *testing.T) {
	repo := newRepo(t)
	gitIn(t, repo, "branch", "feature")
	p := newProvider(t)
	ch := agentChanges(t, p, repo, func(ws string) { write(t, ws, "new.txt", "new\n") })
	other := agentChanges(t, p, repo, func(ws string) { write(t, ws, "other.txt", "o\n") })
	require.FileExists(t, ch.Patch)
	require.Equal(t, []string{ch.Branch, other.Branch}, branches(t, repo))
	before := userState(t, repo)

	ctx := context.Background()
	require.NoError(t, p.Discard(ctx, ch))
	assert.Equal(t, []string{other.Branch}, branches(t, repo), "another run's branch stays")
	assert.NoFileExists(t, ch.Patch)
	assert.FileExists(t, other.Patch)
	equalBytes(t, before, userState(t, repo))
	assert.Contains(t, gitIn(t, repo, "branch", "--list", "feature"), "feature")

	require.NoError(t, p.Discard(ctx, ch), "discarding twice")
	_, err := p.Apply(ctx, ch, workspace.ApplyOptions{})
	require.ErrorIs(t, err, agenttypes.ErrWorkspace)
	assert.Contains(t, err.Error(), "discarded")
	missing(t, repo, "new.txt")
}

// A branch that moved since the run may hold someone's work: it is
// left, and the error says how to delete it.
func TestDiscardLeavesAMovedBranch(t *testing.T) {
	repo := newRepo(t)
	p := newProvider(t)
	ch := agentChanges(t, p, repo, func(ws string) { write(t, ws, "new.txt", "new\n") })
	check := filepath.Join(t.TempDir(), "check")
	gitIn(t, repo, "worktree", "add", "-q", check, ch.Branch)
	write(t, check, "mine.txt", "mine\n")
	gitIn(t, check, "add", "mine.txt")
	gitIn(t, check, "commit", "-q", "-m", "mine")

	err := p.Discard(context.Background(), ch)
	require.ErrorIs(t, err, agenttypes.ErrWorkspace)
	assert.Contains(t, err.Error(), "has moved")
	assert.Contains(t, err.Error(), "git branch -D "+ch.Branch)
	assert.Equal(t, []string{ch.Branch}, branches(t, repo))
}

// A branch checked out somewhere is left.
func TestDiscardLeavesACheckedOutBranch(t *testing.T) {
	repo := newRepo(t)
	p := newProvider(t)
	ch := agentChanges(t, p, repo, func(ws string) { write(t, ws, "new.txt", "new\n") })
	check := filepath.Join(t.TempDir(), "check")
	gitIn(t, repo, "worktree", "add", "-q", check, ch.Branch)
	err := p.Discard(context.Background(), ch)
	require.ErrorIs(t, err, agenttypes.ErrWorkspace)
	assert.Contains(t, err.Error(), "checked out in "+realPath(t, check))
	assert.Equal(t, []string{ch.Branch}, branches(t, repo))
}

// Only troupe's branches are ever deleted, whatever the changes say.
func TestDiscardRefusesOtherBranches(t *testing.T) {
	repo := newRepo(t)
	p := newProvider(t)
	head := gitIn(t, repo, "rev-parse", "HEAD")
	for _, b := range []string{"main", "troupe/../main", "troupe/x"} {
		err := p.Discard(context.Background(), &agenttypes.Changes{Repo: filepath.Join(repo, ".git"), Branch: b, Base: head, Head: head})
		require.ErrorIs(t, err, agenttypes.ErrWorkspace, b)
	}
	assert.Equal(t, head, gitIn(t, repo, "rev-parse", "main"))
}

// The workspace a killed process left open is removed by DiscardRun,
// worktree, branch and record, whatever it held; a live one is left.
func TestDiscardRunRemovesALeftWorkspace(t *testing.T) {
	repo, state := newRepo(t), t.TempDir()
	gone := newProviderAt(t, state)
	ws := open(t, gone, repo, "a", nil)
	write(t, ws.Dir(), "partial.txt", "partial\n")
	require.NoError(t, gone.Close()) // as a killed process would leave it

	p := newProviderAt(t, state)
	live := open(t, p, repo, "live", nil)
	ctx := context.Background()
	require.NoError(t, p.DiscardRun(ctx, "run-1", "a"))
	missing(t, ws.Dir(), "")
	assert.Equal(t, []string{live.Branch()}, branches(t, repo))
	assert.Len(t, worktrees(t, repo), 2, "the main tree and the live workspace")
	require.NoError(t, p.DiscardRun(ctx, "run-1", "a"), "twice")

	err := p.DiscardRun(ctx, "run-1", "")
	require.ErrorIs(t, err, agenttypes.ErrWorkspace)
	assert.Contains(t, err.Error(), "in use")
	assert.DirExists(t, live.Dir())
	closeWS(t, live)
	records, err := os.ReadDir(filepath.Join(state, "records"))
	require.NoError(t, err)
	assert.Empty(t, records)
}
