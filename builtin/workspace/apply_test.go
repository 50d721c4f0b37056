package workspace_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/workspace"
)

// blobAt is the exact content of path at rev.
func blobAt(t *testing.T, dir, rev, path string) string {
	t.Helper()
	cmd := exec.Command("git", "cat-file", "blob", rev+":"+path)
	cmd.Dir = dir
	out, err := cmd.Output()
	require.NoError(t, err)
	return string(out)
}

// agentChanges opens a workspace on dir, lets change act in it, and
// closes it.
func agentChanges(t *testing.T, p *workspace.Provider, dir string, change func(ws string)) *agenttypes.Changes {
	t.Helper()
	w := open(t, p, dir, "a", nil)
	change(w.Dir())
	return closeWS(t, w)
}

// porcelain is git status --porcelain of dir, untracked files listed,
// its lines' leading blanks kept.
func porcelain(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command("git", "status", "--porcelain", "--untracked-files=all")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	out, err := cmd.Output()
	require.NoError(t, err)
	return strings.TrimRight(string(out), "\n")
}

// A clean apply writes exactly the changed files, as the run's head has
// them, modes and deletions included, into the user's tree; the index
// and HEAD do not move, so they show as unstaged changes; the user's own
// staged and untracked work stays.
func TestApplyWritesTheChangesAndLeavesTheIndex(t *testing.T) {
	repo, state := newRepo(t), t.TempDir()
	p := newProviderAt(t, state)
	ch := agentChanges(t, p, repo, func(ws string) {
		write(t, ws, "f.txt", replaceLine(lines, 1, "one"))
		write(t, ws, "tools/run.sh", "#!/bin/sh\necho hi\n")
		require.NoError(t, os.Chmod(filepath.Join(ws, "tools/run.sh"), 0o755))
		require.NoError(t, os.Remove(filepath.Join(ws, "gone.txt")))
		require.NoError(t, os.Remove(filepath.Join(ws, "sub/s.txt")))
		require.NoError(t, os.Symlink("f.txt", filepath.Join(ws, "link")))
	})
	assert.Equal(t, realPath(t, repo), ch.Dir, "the changes name the directory they were made from")

	// Meanwhile the user stages one change and starts a file of their own.
	write(t, repo, "keep.txt", "staged\n")
	gitIn(t, repo, "add", "keep.txt")
	write(t, repo, "mine.txt", "mine\n")
	index, err := os.ReadFile(filepath.Join(repo, ".git", "index"))
	require.NoError(t, err)
	head := gitIn(t, repo, "rev-parse", "HEAD")

	res, err := p.Apply(context.Background(), ch, workspace.ApplyOptions{})
	require.NoError(t, err)
	assert.Equal(t, realPath(t, repo), res.Dir)
	assert.Equal(t, []string{"f.txt", "link", "tools/run.sh"}, res.Written)
	assert.Equal(t, []string{"gone.txt", "sub/s.txt"}, res.Removed)
	assert.False(t, res.UpToDate)

	for _, f := range []string{"f.txt", "tools/run.sh"} {
		assert.Equal(t, blobAt(t, repo, ch.Head, f), read(t, repo, f), f)
	}
	fi, err := os.Stat(filepath.Join(repo, "tools/run.sh"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm(), "the executable bit")
	target, err := os.Readlink(filepath.Join(repo, "link"))
	require.NoError(t, err)
	assert.Equal(t, "f.txt", target)
	missing(t, repo, "gone.txt")
	missing(t, repo, "sub") // left empty, so removed, as a checkout does

	after, err := os.ReadFile(filepath.Join(repo, ".git", "index"))
	require.NoError(t, err)
	assert.Equal(t, index, after, "the user's index")
	assert.Equal(t, head, gitIn(t, repo, "rev-parse", "HEAD"))
	assert.Equal(t, "staged\n", read(t, repo, "keep.txt"))
	assert.Equal(t, "mine\n", read(t, repo, "mine.txt"))
	assert.Equal(t, strings.Join([]string{
		" M f.txt", " D gone.txt", "M  keep.txt", " D sub/s.txt", "?? link", "?? mine.txt", "?? tools/run.sh",
	}, "\n"), porcelain(t, repo))
	assertNothingLeft(t, state)
}

// The user's uncommitted change elsewhere in a file the changes touch is
// kept: the merge has both.
func TestApplyMergesAnUncommittedChangeElsewhere(t *testing.T) {
	repo := newRepo(t)
	p := newProvider(t)
	ch := agentChanges(t, p, repo, func(ws string) { write(t, ws, "f.txt", replaceLine(lines, 1, "one")) })
	write(t, repo, "f.txt", replaceLine(lines, 10, "ten"))
	res, err := p.Apply(context.Background(), ch, workspace.ApplyOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"f.txt"}, res.Written)
	assert.Equal(t, replaceLine(replaceLine(lines, 1, "one"), 10, "ten"), read(t, repo, "f.txt"))
}

// An uncommitted change that conflicts with the changes: Apply refuses,
// names the file and its hunks, and the tree, index and refs stay byte
// for byte as they were.
func TestApplyRefusesAConflictingUncommittedChange(t *testing.T) {
	repo, state := newRepo(t), t.TempDir()
	p := newProviderAt(t, state)
	ch := agentChanges(t, p, repo, func(ws string) {
		write(t, ws, "f.txt", replaceLine(lines, 1, "one"))
		write(t, ws, "new.txt", "new\n")
	})
	write(t, repo, "f.txt", replaceLine(lines, 1, "uno"))
	before := userState(t, repo)

	res, err := p.Apply(context.Background(), ch, workspace.ApplyOptions{})
	require.ErrorIs(t, err, workspace.ErrConflict)
	assert.Contains(t, err.Error(), "f.txt")
	require.Len(t, res.Conflicts, 1)
	assert.Equal(t, "f.txt", res.Conflicts[0].Path)
	assert.Contains(t, res.Conflicts[0].Hunks, "<<<<<<< yours\nuno\n")
	assert.Contains(t, res.Conflicts[0].Hunks, ">>>>>>> "+ch.Branch+"\n")
	assert.Contains(t, res.Conflicts[0].Hunks, "uno")
	assert.Contains(t, res.Conflicts[0].Hunks, "one")
	assert.Contains(t, res.Conflicts[0].Reason, "f.txt")
	assert.Empty(t, res.Written)
	equalBytes(t, before, userState(t, repo))
	missing(t, repo, "new.txt")
	assertNothingLeft(t, state)
}

// A commit the user made since the run that conflicts with the changes:
// refused, nothing written.
func TestApplyRefusesAConflictWithANewCommit(t *testing.T) {
	repo := newRepo(t)
	p := newProvider(t)
	ch := agentChanges(t, p, repo, func(ws string) { write(t, ws, "f.txt", replaceLine(lines, 1, "one")) })
	write(t, repo, "f.txt", replaceLine(lines, 1, "first"))
	gitIn(t, repo, "commit", "-q", "-am", "mine")
	before := userState(t, repo)

	res, err := p.Apply(context.Background(), ch, workspace.ApplyOptions{})
	require.ErrorIs(t, err, workspace.ErrConflict)
	require.Len(t, res.Conflicts, 1)
	assert.Equal(t, "f.txt", res.Conflicts[0].Path)
	equalBytes(t, before, userState(t, repo))

	// A commit that does not conflict is merged with.
	gitIn(t, repo, "reset", "-q", "--hard", "HEAD~1")
	write(t, repo, "f.txt", replaceLine(lines, 10, "ten"))
	gitIn(t, repo, "commit", "-q", "-am", "mine, elsewhere")
	_, err = p.Apply(context.Background(), ch, workspace.ApplyOptions{})
	require.NoError(t, err)
	assert.Equal(t, replaceLine(replaceLine(lines, 1, "one"), 10, "ten"), read(t, repo, "f.txt"))
	assert.Equal(t, " M f.txt", porcelain(t, repo))
}

// Applying twice: the second finds the changes there and does nothing.
func TestApplyTwiceIsHarmless(t *testing.T) {
	repo := newRepo(t)
	p := newProvider(t)
	ch := agentChanges(t, p, repo, func(ws string) {
		write(t, ws, "f.txt", replaceLine(lines, 1, "one"))
		write(t, ws, "new.txt", "new\n")
		require.NoError(t, os.Remove(filepath.Join(ws, "gone.txt")))
	})
	_, err := p.Apply(context.Background(), ch, workspace.ApplyOptions{})
	require.NoError(t, err)
	before := userState(t, repo)
	res, err := p.Apply(context.Background(), ch, workspace.ApplyOptions{})
	require.NoError(t, err)
	assert.True(t, res.UpToDate)
	assert.Empty(t, res.Written)
	assert.Empty(t, res.Removed)
	equalBytes(t, before, userState(t, repo))

	// Committed by the user, they are still there: nothing to do.
	gitIn(t, repo, "add", "-A")
	gitIn(t, repo, "commit", "-q", "-m", "applied")
	res, err = p.Apply(context.Background(), ch, workspace.ApplyOptions{})
	require.NoError(t, err)
	assert.True(t, res.UpToDate)
}

// Check says what Apply would write, and writes nothing.
func TestApplyCheckWritesNothing(t *testing.T) {
	repo := newRepo(t)
	p := newProvider(t)
	ch := agentChanges(t, p, repo, func(ws string) { write(t, ws, "new.txt", "new\n") })
	before := userState(t, repo)
	res, err := p.Apply(context.Background(), ch, workspace.ApplyOptions{Check: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"new.txt"}, res.Written)
	equalBytes(t, before, userState(t, repo))
}

// The changes apply to a directory that is not a git repository, which
// still gains no .git.
func TestApplyToAPlainDirectory(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.txt", lines)
	write(t, dir, "b.txt", "b\n")
	write(t, dir, ".gitignore", "secret.txt\n")
	write(t, dir, "secret.txt", "s\n")
	p := newProvider(t)
	ch := agentChanges(t, p, dir, func(ws string) {
		write(t, ws, "a.txt", replaceLine(lines, 1, "one"))
		write(t, ws, "lib/c.txt", "c\n")
		require.NoError(t, os.Remove(filepath.Join(ws, "b.txt")))
	})
	write(t, dir, "a.txt", replaceLine(lines, 10, "ten")) // the user went on

	res, err := p.Apply(context.Background(), ch, workspace.ApplyOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"a.txt", "lib/c.txt"}, res.Written)
	assert.Equal(t, []string{"b.txt"}, res.Removed)
	assert.Equal(t, replaceLine(replaceLine(lines, 1, "one"), 10, "ten"), read(t, dir, "a.txt"))
	assert.Equal(t, "c\n", read(t, dir, "lib/c.txt"))
	assert.Equal(t, "s\n", read(t, dir, "secret.txt"))
	missing(t, dir, "b.txt")
	missing(t, dir, ".git")

	res, err = p.Apply(context.Background(), ch, workspace.ApplyOptions{})
	require.NoError(t, err)
	assert.True(t, res.UpToDate, "applied twice")

	// Discarded, the private repository holds no branch of it.
	require.NoError(t, p.Discard(context.Background(), ch))
	assert.Empty(t, gitIn(t, dir, "--git-dir", ch.Repo, "for-each-ref", "refs/heads/"))
	assert.NoFileExists(t, ch.Patch)
	missing(t, dir, ".git")
}

// Changes made from a subdirectory of a repository name paths from its
// top, and apply there.
func TestApplyFromASubdirectory(t *testing.T) {
	repo := newRepo(t)
	p := newProvider(t)
	ch := agentChanges(t, p, filepath.Join(repo, "sub"), func(ws string) { write(t, ws, "s.txt", "changed\n") })
	assert.Equal(t, filepath.Join(realPath(t, repo), "sub"), ch.Dir)
	res, err := p.Apply(context.Background(), ch, workspace.ApplyOptions{})
	require.NoError(t, err)
	assert.Equal(t, realPath(t, repo), res.Dir)
	assert.Equal(t, []string{"sub/s.txt"}, res.Written)
	assert.Equal(t, "changed\n", read(t, repo, "sub/s.txt"))
}

// A file the user's tree keeps ignored, that the changes add with other
// content, is never overwritten: Apply refuses.
func TestApplyRefusesToOverwriteAnIgnoredFile(t *testing.T) {
	repo := newRepo(t)
	write(t, repo, ".env", "SECRET=user\n")
	p := newProvider(t)
	ch := agentChanges(t, p, repo, func(ws string) {
		write(t, ws, ".gitignore", "node_modules/\nbuild/\n")
		write(t, ws, ".env", "SECRET=agent\n")
	})
	require.Equal(t, []string{".env"}, ch.Added)
	before := userState(t, repo)
	res, err := p.Apply(context.Background(), ch, workspace.ApplyOptions{})
	require.ErrorIs(t, err, workspace.ErrConflict)
	require.Len(t, res.Conflicts, 1)
	assert.Equal(t, ".env", res.Conflicts[0].Path)
	assert.Contains(t, res.Conflicts[0].Reason, "ignored")
	equalBytes(t, before, userState(t, repo))
}

// A directory the user replaced by a symlink to somewhere outside is
// never written through: the change to a file below it conflicts.
func TestApplyNeverWritesThroughASymlink(t *testing.T) {
	repo, outside := newRepo(t), t.TempDir()
	p := newProvider(t)
	ch := agentChanges(t, p, repo, func(ws string) { write(t, ws, "sub/s.txt", "changed\n") })
	require.NoError(t, os.RemoveAll(filepath.Join(repo, "sub")))
	require.NoError(t, os.Symlink(outside, filepath.Join(repo, "sub")))
	_, err := p.Apply(context.Background(), ch, workspace.ApplyOptions{})
	require.ErrorIs(t, err, workspace.ErrConflict)
	assert.Empty(t, treeFiles(t, outside))
}

// A child's changes apply to its parent's workspace, through merge, not
// to the user's tree; they name the parent's workspace as their
// directory, and Apply says what to do instead.
func TestApplyRefusesAChildsChanges(t *testing.T) {
	repo := newRepo(t)
	p := newProvider(t)
	parent := open(t, p, repo, "parent", nil)
	child := open(t, p, parent.Dir(), "child", parent)
	write(t, child.Dir(), "c.txt", "c\n")
	ch := closeWS(t, child)
	assert.Equal(t, parent.Dir(), ch.Dir)
	_, err := p.Apply(context.Background(), ch, workspace.ApplyOptions{})
	require.ErrorIs(t, err, agenttypes.ErrWorkspace)
	assert.Contains(t, err.Error(), "parent merges")
	missing(t, repo, "c.txt")
	closeWS(t, parent)
}

// Nothing the repository configures runs when changes are applied and
// discarded, and a file under a filter is written in its stored form.
func TestApplyAndDiscardRunNothingInAHostileRepository(t *testing.T) {
	repo, _ := hostileRepo(t)
	p := newProvider(t)
	ch := agentChanges(t, p, repo, func(ws string) { write(t, ws, "f.txt", replaceLine(lines, 1, "one")) })
	write(t, repo, "keep.txt", "uncommitted\n") // a filtered file to record
	_, err := p.Apply(context.Background(), ch, workspace.ApplyOptions{})
	require.NoError(t, err)
	assert.Equal(t, replaceLine(lines, 1, "one"), read(t, repo, "f.txt"))
	require.NoError(t, p.Discard(context.Background(), ch))
	assert.Empty(t, branches(t, repo))
}

// Empty changes apply as nothing.
func TestApplyNothing(t *testing.T) {
	p := newProvider(t)
	res, err := p.Apply(context.Background(), &agenttypes.Changes{}, workspace.ApplyOptions{})
	require.NoError(t, err)
	assert.True(t, res.UpToDate)
}

// A directory the user's tree keeps ignored as a symlink to somewhere
// outside is never written through, even when the changes stop ignoring
// it and add a file below it.
func TestApplyNeverWritesThroughAnIgnoredSymlink(t *testing.T) {
	repo, outside := newRepo(t), t.TempDir()
	write(t, repo, ".gitignore", ".env\nlinked\n")
	gitIn(t, repo, "commit", "-q", "-am", "ignore linked")
	p := newProvider(t)
	ch := agentChanges(t, p, repo, func(ws string) {
		write(t, ws, ".gitignore", ".env\n")
		write(t, ws, "linked/x.txt", "x\n")
	})
	require.NoError(t, os.Symlink(outside, filepath.Join(repo, "linked")))
	status := porcelain(t, repo)
	res, err := p.Apply(context.Background(), ch, workspace.ApplyOptions{})
	require.ErrorIs(t, err, workspace.ErrConflict)
	require.Len(t, res.Conflicts, 1)
	assert.Equal(t, "linked/x.txt", res.Conflicts[0].Path)
	assert.Contains(t, res.Conflicts[0].Reason, "symlink")
	assert.Empty(t, treeFiles(t, outside))
	assert.Equal(t, ".env\nlinked\n", read(t, repo, ".gitignore"))
	assert.Equal(t, status, porcelain(t, repo))
}

// A directory the changes make a file, and a file they make a
// directory, are replaced as a checkout would.
func TestApplyReplacesADirectoryByAFileAndBack(t *testing.T) {
	repo := newRepo(t)
	p := newProvider(t)
	ch := agentChanges(t, p, repo, func(ws string) {
		require.NoError(t, os.RemoveAll(filepath.Join(ws, "sub")))
		write(t, ws, "sub", "now a file\n")
		require.NoError(t, os.Remove(filepath.Join(ws, "gone.txt")))
		write(t, ws, "gone.txt/inner.txt", "now a directory\n")
	})
	res, err := p.Apply(context.Background(), ch, workspace.ApplyOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"gone.txt/inner.txt", "sub"}, res.Written)
	assert.Equal(t, "now a file\n", read(t, repo, "sub"))
	assert.Equal(t, "now a directory\n", read(t, repo, "gone.txt/inner.txt"))

	// An untracked file of the user's in the directory keeps it there:
	// refused.
	repo = newRepo(t)
	ch = agentChanges(t, p, repo, func(ws string) {
		require.NoError(t, os.RemoveAll(filepath.Join(ws, "sub")))
		write(t, ws, "sub", "now a file\n")
	})
	write(t, repo, "sub/build/out.o", "mine\n") // ignored, so not in the merge
	_, err = p.Apply(context.Background(), ch, workspace.ApplyOptions{})
	require.ErrorIs(t, err, workspace.ErrConflict)
	assert.Equal(t, "s\n", read(t, repo, "sub/s.txt"))
}

// Files are written as a checkout writes them: with the line endings the
// repository's attributes ask for.
func TestApplyWritesLineEndingsAsACheckout(t *testing.T) {
	repo := newRepo(t)
	write(t, repo, ".gitattributes", "*.txt text eol=crlf\n")
	gitIn(t, repo, "add", ".gitattributes")
	gitIn(t, repo, "commit", "-q", "-m", "crlf")
	require.NoError(t, os.Remove(filepath.Join(repo, "f.txt")))
	gitIn(t, repo, "checkout", "--", "f.txt")
	require.Equal(t, strings.ReplaceAll(lines, "\n", "\r\n"), read(t, repo, "f.txt"))
	p := newProvider(t)
	ch := agentChanges(t, p, repo, func(ws string) {
		write(t, ws, "f.txt", strings.ReplaceAll(replaceLine(lines, 1, "one"), "\n", "\r\n"))
	})
	_, err := p.Apply(context.Background(), ch, workspace.ApplyOptions{})
	require.NoError(t, err)
	assert.Equal(t, strings.ReplaceAll(replaceLine(lines, 1, "one"), "\n", "\r\n"), read(t, repo, "f.txt"))
	assert.Equal(t, " M f.txt", porcelain(t, repo))
}
