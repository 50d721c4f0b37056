package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Close commits everything, untracked files included and ignored ones
// not, reports what changed, writes a patch that applies on the base,
// and removes the worktree with git, leaving the branch.
func TestCloseRecordsEverything(t *testing.T) {
	repo := newRepo(t)
	before := userState(t, repo)
	p := newProvider(t)
	w := open(t, p, repo, "a", nil)
	dir := w.Dir()
	write(t, dir, "new/n.txt", "n1\nn2\n")
	write(t, dir, "f.txt", strings.Replace(lines, "5\n", "five\n", 1))
	write(t, dir, "bin.dat", "\x00\x01\x02")
	require.NoError(t, os.Remove(filepath.Join(dir, "gone.txt")))
	write(t, dir, ".env", "SECRET=2\n")
	write(t, dir, "build/x.o", "x\n")

	ch := closeWS(t, w)
	assert.Equal(t, []string{"bin.dat", "new/n.txt"}, ch.Added)
	assert.Equal(t, []string{"f.txt"}, ch.Modified)
	assert.Equal(t, []string{"gone.txt"}, ch.Deleted)
	assert.Equal(t, 3, ch.Insertions) // n1, n2, five
	assert.Equal(t, 2, ch.Deletions)  // 5, gone
	assert.Contains(t, ch.Diffstat, "4 files changed")
	assert.Equal(t, "troupe/run-1/a", ch.Branch)
	assert.Equal(t, w.Base(), ch.Base)
	assert.Equal(t, gitIn(t, repo, "rev-parse", "troupe/run-1/a"), ch.Head)
	assert.Equal(t, realPath(t, filepath.Join(repo, ".git")), ch.Repo)
	assert.Equal(t, "five", strings.Split(fileAt(t, repo, ch.Head, "f.txt"), "\n")[4])
	_, err := gitErr(repo, "cat-file", "-e", ch.Head+":.env")
	assert.Error(t, err, ".env is ignored and never committed")

	// The worktree is gone, and git knows it.
	missing(t, dir, "")
	assert.Equal(t, []string{realPath(t, repo)}, worktrees(t, repo))
	equalBytes(t, before, userState(t, repo))

	// The patch applies to the base, and gives the head.
	check := filepath.Join(t.TempDir(), "check")
	gitIn(t, repo, "worktree", "add", "-q", "--detach", check, ch.Base)
	gitIn(t, check, "apply", "--check", ch.Patch)
	gitIn(t, check, "apply", "--index", ch.Patch)
	assert.Equal(t, gitIn(t, repo, "rev-parse", ch.Head+"^{tree}"), gitIn(t, check, "write-tree"))
}

// A workspace nothing changed in closes with empty changes, no commit
// and no patch.
func TestCloseWithoutChanges(t *testing.T) {
	repo := newRepo(t)
	write(t, repo, "f.txt", "uncommitted\n")
	p := newProvider(t)
	w := open(t, p, repo, "a", nil)
	write(t, w.Dir(), "node_modules/x.js", "ignored\n")
	ch := closeWS(t, w)
	assert.True(t, ch.Empty())
	assert.Equal(t, w.Base(), ch.Head)
	assert.Empty(t, ch.Patch)
	assert.Empty(t, ch.Diffstat)
	assert.Equal(t, w.Base(), gitIn(t, repo, "rev-parse", "troupe/run-1/a"))
}

// An agent cancelled mid-write may leave a half-written file and git's
// own index lock (a git it ran was killed): Close records the partial
// work all the same.
func TestCloseAfterAnAgentWasCancelled(t *testing.T) {
	repo := newRepo(t)
	p := newProvider(t)
	w := open(t, p, repo, "a", nil)
	write(t, w.Dir(), "half.txt", "half writ")
	gitDir := gitIn(t, w.Dir(), "rev-parse", "--absolute-git-dir")
	write(t, gitDir, "index.lock", "")
	ch, err := w.Close(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"half.txt"}, ch.Added)
	assert.Equal(t, "half writ", fileAt(t, repo, ch.Head, "half.txt"))
}

// Two workspaces of one directory never see each other's writes.
func TestSiblingsDoNotSeeEachOther(t *testing.T) {
	repo := newRepo(t)
	p := newProvider(t)
	a := open(t, p, repo, "a", nil)
	b := open(t, p, repo, "b", nil)
	assert.NotEqual(t, a.Dir(), b.Dir())
	write(t, a.Dir(), "f.txt", "from a\n")
	write(t, a.Dir(), "a-only.txt", "a\n")
	write(t, b.Dir(), "b-only.txt", "b\n")
	assert.Equal(t, lines, read(t, b.Dir(), "f.txt"))
	missing(t, b.Dir(), "a-only.txt")
	missing(t, a.Dir(), "b-only.txt")
	cha, chb := closeWS(t, a), closeWS(t, b)
	assert.Equal(t, []string{"a-only.txt"}, cha.Added)
	assert.Equal(t, []string{"b-only.txt"}, chb.Added)
	assert.NotEqual(t, cha.Branch, chb.Branch)
}

func realPath(t *testing.T, p string) string {
	t.Helper()
	real, err := filepath.EvalSymlinks(p)
	require.NoError(t, err)
	return real
}
