package workspace_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/workspace"
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
	assert.NotContains(t, branches(t, repo), "troupe/run-1/a", "a workspace that changed nothing leaves no branch behind")
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

// Something in the workspace (a test, git init) leaves a repository of
// its own there, with work in it. git would record it only as the
// commit its HEAD is at, so removing the worktree would lose its files:
// Close records the rest, leaves the worktree in place and says where,
// naming the nested repository. A repository with no commit yet, which
// git cannot record at all, is kept the same way.
func TestCloseKeepsAWorkspaceHoldingANestedRepository(t *testing.T) {
	for name, commit := range map[string]bool{"committed": true, "no commit yet": false} {
		t.Run(name, func(t *testing.T) {
			repo := newRepo(t)
			p := newProvider(t)
			w := open(t, p, repo, "a", nil)
			write(t, w.Dir(), "plain.txt", "plain\n")
			write(t, w.Dir(), "lib/work.go", "precious\n")
			gitIn(t, filepath.Join(w.Dir(), "lib"), "init", "-q")
			if commit {
				gitIn(t, filepath.Join(w.Dir(), "lib"), "add", ".")
				gitIn(t, filepath.Join(w.Dir(), "lib"), "commit", "-q", "-m", "x")
			}
			ch, err := w.Close(context.Background())
			require.ErrorIs(t, err, agenttypes.ErrWorkspace)
			assert.Contains(t, err.Error(), "lib")
			assert.Contains(t, err.Error(), w.Top(), "the error says where the work is")
			assert.Equal(t, "precious\n", read(t, w.Dir(), "lib/work.go"))
			assert.Len(t, worktrees(t, repo), 2, "the worktree stays")
			if commit {
				require.ErrorIs(t, err, workspace.ErrNestedRepository)
				require.NotNil(t, ch)
				assert.Equal(t, "plain\n", fileAt(t, repo, ch.Head, "plain.txt")+"\n", "the rest is on the branch")
			}
		})
	}
}

// Close reports what ignore rules kept out of the changes: the first few
// paths, a wholly ignored directory as one, and how many there are.
func TestCloseReportsWhatIgnoreRulesLeftOut(t *testing.T) {
	repo := newRepo(t)
	p := newProvider(t)
	w := open(t, p, repo, "a", nil)
	write(t, w.Dir(), "kept.txt", "kept\n")
	write(t, w.Dir(), ".env", "SECRET=1\n")
	write(t, w.Dir(), "sub/.env", "SECRET=2\n")
	for i := range 30 {
		write(t, w.Dir(), fmt.Sprintf("node_modules/m%d/index.js", i), "x\n")
		write(t, w.Dir(), fmt.Sprintf("build/%02d.o", i), "x\n")
	}
	ch := closeWS(t, w)
	assert.Equal(t, []string{"kept.txt"}, ch.Added)
	assert.Equal(t, []string{".env", "build/", "node_modules/", "sub/.env"}, ch.Ignored)
	assert.Equal(t, 4, ch.IgnoredCount)

	w = open(t, p, repo, "b", nil)
	for i := range 30 {
		write(t, w.Dir(), fmt.Sprintf("x/%02d/.env", i), "x\n")
	}
	ch = closeWS(t, w)
	assert.Len(t, ch.Ignored, 20)
	assert.Equal(t, "x/00/.env", ch.Ignored[0])
	assert.Equal(t, 30, ch.IgnoredCount)
}
