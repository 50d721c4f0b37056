package workspace_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
