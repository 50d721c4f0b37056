package workspace_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/builtin/workspace"
)

// A top-level workspace starts from HEAD plus everything not committed:
// staged, unstaged and untracked files, but no ignored one; and the
// user's tree, index and refs do not change.
func TestOpenStartsFromTheCurrentState(t *testing.T) {
	repo := newRepo(t)
	head := gitIn(t, repo, "rev-parse", "HEAD")
	write(t, repo, "staged.txt", "staged\n")
	gitIn(t, repo, "add", "staged.txt")
	write(t, repo, "f.txt", strings.Replace(lines, "3\n", "three\n", 1))
	write(t, repo, "untracked/u.txt", "u\n")
	require.NoError(t, os.Remove(filepath.Join(repo, "gone.txt")))
	write(t, repo, ".env", "SECRET=1\n")
	write(t, repo, "node_modules/m/index.js", "m\n")
	write(t, repo, "build/out.bin", "out\n")
	before := userState(t, repo)

	p := newProvider(t)
	w := open(t, p, repo, "agent-1", nil)

	assert.Equal(t, []string{".gitignore", "f.txt", "keep.txt", "staged.txt", "sub/s.txt", "untracked/u.txt"}, treeFiles(t, w.Dir()))
	assert.Equal(t, "three", strings.Split(read(t, w.Dir(), "f.txt"), "\n")[2])
	assert.Equal(t, head, gitIn(t, repo, "rev-parse", w.Base()+"^"), "the base is a commit on HEAD")
	assert.Equal(t, []string{"troupe/run-1/agent-1"}, branches(t, repo))
	equalBytes(t, before, userState(t, repo))

	ch := closeWS(t, w)
	assert.True(t, ch.Empty())
	equalBytes(t, before, userState(t, repo))
}

// With nothing uncommitted, the workspace starts at HEAD itself.
func TestOpenOnACleanTreeStartsAtHead(t *testing.T) {
	repo := newRepo(t)
	p := newProvider(t)
	w := open(t, p, repo, "a", nil)
	assert.Equal(t, gitIn(t, repo, "rev-parse", "HEAD"), w.Base())
	assert.Equal(t, "troupe/run-1/a", w.Branch())
	closeWS(t, w)
}

// The excludes file applies to snapshots besides the project's own
// ignore files: what the user keeps out of git everywhere stays out.
func TestExcludesFileKeepsFilesOut(t *testing.T) {
	repo, state := newRepo(t), t.TempDir()
	excludes := filepath.Join(t.TempDir(), "ignore")
	write(t, filepath.Dir(excludes), "ignore", "*.secret\n")
	write(t, repo, "token.secret", "t\n")
	p, err := workspace.New(workspace.Config{StateDir: state, ExcludesFile: excludes})
	require.NoError(t, err)
	defer p.Close()
	w := open(t, p, repo, "a", nil)
	missing(t, w.Dir(), "token.secret")
	write(t, w.Dir(), "made.secret", "m\n")
	assert.True(t, closeWS(t, w).Empty())
}

// A project that uses sparse checkout still gets a whole worktree, and
// its files do not look deleted when the work is recorded.
func TestSparseCheckoutDoesNotShrinkTheWorkspace(t *testing.T) {
	repo := newRepo(t)
	// The old way: in the common configuration, so every worktree of the
	// repository reads it.
	gitIn(t, repo, "config", "core.sparseCheckout", "true")
	write(t, repo, ".git/info/sparse-checkout", "sub/\n")
	gitIn(t, repo, "read-tree", "-mu", "HEAD")
	missing(t, repo, "f.txt")
	p := newProvider(t)
	w := open(t, p, repo, "a", nil)
	assert.Contains(t, treeFiles(t, w.Dir()), "f.txt")
	ch := closeWS(t, w)
	assert.Empty(t, ch.Deleted)
}
