package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

// replaceLine returns lines with line n (1-based) replaced.
func replaceLine(content string, n int, with string) string {
	ls := strings.Split(content, "\n")
	ls[n-1] = with
	return strings.Join(ls, "\n")
}

// wsState is every file of a workspace with its content, .git aside.
func wsState(t *testing.T, dir string) map[string]string {
	t.Helper()
	state := map[string]string{}
	for _, f := range treeFiles(t, dir) {
		state[f] = read(t, dir, f)
	}
	return state
}

// A child starts from its parent's current state, uncommitted and
// untracked files included, and the parent's files, index and HEAD stay
// as they were.
func TestChildStartsFromItsParentsUncommittedState(t *testing.T) {
	repo := newRepo(t)
	p := newProvider(t)
	parent := open(t, p, repo, "parent", nil)
	write(t, parent.Dir(), "f.txt", replaceLine(lines, 2, "two"))
	write(t, parent.Dir(), "p-new.txt", "p\n")
	write(t, parent.Dir(), "build/ignored.o", "o\n")
	gitDir := gitIn(t, parent.Dir(), "rev-parse", "--absolute-git-dir")
	index, err := os.ReadFile(filepath.Join(gitDir, "index"))
	require.NoError(t, err)
	head := gitIn(t, parent.Dir(), "rev-parse", "HEAD")
	files := wsState(t, parent.Dir())

	child := open(t, p, parent.Dir(), "child", parent)
	assert.Equal(t, replaceLine(lines, 2, "two"), read(t, child.Dir(), "f.txt"))
	assert.Equal(t, "p\n", read(t, child.Dir(), "p-new.txt"))
	missing(t, child.Dir(), "build/ignored.o")

	after, err := os.ReadFile(filepath.Join(gitDir, "index"))
	require.NoError(t, err)
	assert.Equal(t, index, after, "the parent's index")
	assert.Equal(t, head, gitIn(t, parent.Dir(), "rev-parse", "HEAD"))
	assert.Equal(t, files, wsState(t, parent.Dir()))

	// The child's changes are its own, against the base it started from.
	write(t, child.Dir(), "c.txt", "c\n")
	ch := closeWS(t, child)
	assert.Equal(t, []string{"c.txt"}, ch.Added)
	assert.Empty(t, ch.Modified)
	closeWS(t, parent)
}

// Two children edit one file in different places; the parent merges
// both, its own uncommitted work kept; merging one again is harmless.
func TestMergeClean(t *testing.T) {
	repo := newRepo(t)
	before := userState(t, repo)
	p := newProvider(t)
	parent := open(t, p, repo, "parent", nil)
	a := open(t, p, parent.Dir(), "a", parent)
	b := open(t, p, parent.Dir(), "b", parent)
	write(t, a.Dir(), "f.txt", replaceLine(lines, 1, "one"))
	write(t, b.Dir(), "f.txt", replaceLine(lines, 9, "nine"))
	write(t, b.Dir(), "b.txt", "b\n")
	cha, chb := closeWS(t, a), closeWS(t, b)
	write(t, parent.Dir(), "mine.txt", "mine\n") // untracked, uncommitted
	write(t, parent.Dir(), "node_modules/x.js", "x\n")

	ctx := context.Background()
	res, err := parent.Merge(ctx, cha)
	require.NoError(t, err)
	assert.Equal(t, []string{"f.txt"}, res.Files)
	assert.Empty(t, res.Conflicts)
	res, err = parent.Merge(ctx, chb)
	require.NoError(t, err)
	assert.Equal(t, []string{"b.txt", "f.txt"}, res.Files)
	assert.Equal(t, replaceLine(replaceLine(lines, 1, "one"), 9, "nine"), read(t, parent.Dir(), "f.txt"))
	assert.Equal(t, "mine\n", read(t, parent.Dir(), "mine.txt"))
	assert.Equal(t, "x\n", read(t, parent.Dir(), "node_modules/x.js"))
	assert.Empty(t, gitIn(t, parent.Dir(), "status", "--porcelain"), "index and HEAD match the files")

	res, err = parent.Merge(ctx, cha)
	require.NoError(t, err)
	assert.Empty(t, res.Files)
	assert.Empty(t, res.Conflicts)

	ch := closeWS(t, parent)
	assert.Equal(t, []string{"b.txt", "mine.txt"}, ch.Added)
	assert.Equal(t, []string{"f.txt"}, ch.Modified)
	equalBytes(t, before, userState(t, repo))
}

// A parent that goes on changing what it had not committed when a child
// started does not conflict with itself: the merge's base is the state
// the child started from.
func TestMergeBaseIsTheChildsStart(t *testing.T) {
	repo := newRepo(t)
	p := newProvider(t)
	parent := open(t, p, repo, "parent", nil)
	write(t, parent.Dir(), "f.txt", replaceLine(lines, 3, "three"))
	child := open(t, p, parent.Dir(), "child", parent)
	write(t, parent.Dir(), "f.txt", replaceLine(lines, 3, "THREE"))
	write(t, child.Dir(), "f.txt", replaceLine(replaceLine(lines, 3, "three"), 8, "eight"))
	ch := closeWS(t, child)
	assert.Equal(t, 1, ch.Insertions, "the child's changes are its own")

	res, err := parent.Merge(context.Background(), ch)
	require.NoError(t, err)
	require.Empty(t, res.Conflicts)
	assert.Equal(t, replaceLine(replaceLine(lines, 3, "THREE"), 8, "eight"), read(t, parent.Dir(), "f.txt"))
	closeWS(t, parent)
}

// A conflict leaves the workspace's files exactly as they were,
// untracked ones too, and reports each file with its hunks and git's
// reason.
func TestMergeConflict(t *testing.T) {
	repo := newRepo(t)
	p := newProvider(t)
	parent := open(t, p, repo, "parent", nil)
	child := open(t, p, parent.Dir(), "child", parent)
	write(t, child.Dir(), "f.txt", replaceLine(lines, 4, "four from the child"))
	require.NoError(t, os.Remove(filepath.Join(child.Dir(), "keep.txt")))
	ch := closeWS(t, child)
	write(t, parent.Dir(), "f.txt", replaceLine(lines, 4, "four from the parent"))
	write(t, parent.Dir(), "keep.txt", "kept and changed\n")
	write(t, parent.Dir(), "untracked.txt", "u\n")
	files := wsState(t, parent.Dir())

	res, err := parent.Merge(context.Background(), ch)
	require.NoError(t, err)
	assert.Empty(t, res.Files)
	require.Len(t, res.Conflicts, 2)
	f := res.Conflicts[0]
	assert.Equal(t, "f.txt", f.Path)
	assert.Contains(t, f.Reason, "CONFLICT (content)")
	assert.Regexp(t, `(?s)^<<<<<<< [0-9a-f]+\nfour from the parent\n=======\nfour from the child\n>>>>>>> [0-9a-f]+\n$`, f.Hunks)
	k := res.Conflicts[1]
	assert.Equal(t, "keep.txt", k.Path)
	assert.Contains(t, k.Reason, "CONFLICT (modify/delete)")
	assert.Empty(t, k.Hunks)
	assert.Equal(t, files, wsState(t, parent.Dir()))

	// The parent's work is all there when it ends.
	pch := closeWS(t, parent)
	assert.Equal(t, []string{"untracked.txt"}, pch.Added)
	assert.Equal(t, []string{"f.txt", "keep.txt"}, pch.Modified)
}

// Only changes of the same repository merge; nil or empty ones merge as
// nothing.
func TestMergeRefusesForeignChanges(t *testing.T) {
	repo, other := newRepo(t), newRepo(t)
	p := newProvider(t)
	w := open(t, p, repo, "w", nil)
	o := open(t, p, other, "o", nil)
	write(t, o.Dir(), "x.txt", "x\n")
	och := closeWS(t, o)
	_, err := w.Merge(context.Background(), och)
	require.ErrorIs(t, err, agenttypes.ErrWorkspace)
	assert.Contains(t, err.Error(), "only a child's changes merge")

	res, err := w.Merge(context.Background(), nil)
	require.NoError(t, err)
	assert.Empty(t, res.Files)
	closeWS(t, w)
}
