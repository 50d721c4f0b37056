package workspace_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/workspace"
)

func openDurable(t *testing.T, p *workspace.Provider, dir, agent string, parent agenttypes.Workspace) agenttypes.DurableWorkspace {
	t.Helper()
	ws, err := p.Open(context.Background(), agenttypes.WorkspaceRequest{Run: "run-1", Agent: agent, Dir: dir, Parent: parent, Durable: true})
	require.NoError(t, err)
	dw, ok := ws.(agenttypes.DurableWorkspace)
	require.True(t, ok, "a durable workspace has a handle")
	require.NotEmpty(t, dw.Handle())
	return dw
}

func reopen(t *testing.T, p *workspace.Provider, handle string) agenttypes.Workspace {
	t.Helper()
	w, err := p.Reopen(context.Background(), handle)
	require.NoError(t, err)
	return w
}

// stateFiles is every file under a state directory with its content.
func stateFiles(t *testing.T, state string) map[string]string {
	t.Helper()
	files := map[string]string{}
	for _, f := range treeFiles(t, state) {
		files[f] = read(t, state, f)
	}
	return files
}

// A durable workspace opened in one process is reopened by its handle in
// another, on the same state directory, which writes, starts a child and
// merges it; the first process's Close records both processes' work.
func TestDurableWorkspaceReopenedInAnotherProcess(t *testing.T) {
	repo, state := newRepo(t), t.TempDir()
	p := newProviderAt(t, state)
	w := openDurable(t, p, repo, "agent", nil)
	write(t, w.Dir(), "mine.txt", "from the first process\n")

	h := startHelper(t, state, "edit", w.Handle())
	h.wait(t)
	assert.Equal(t, "from the helper\n", read(t, w.Dir(), "helper.txt"))
	assert.Equal(t, "child helper\n", read(t, w.Dir(), "c-helper.txt"), "the child's changes were merged")

	ch := closeWS(t, w)
	assert.Equal(t, []string{"c-helper.txt", "helper.txt", "mine.txt"}, ch.Added)
	assert.Equal(t, "from the first process", fileAt(t, repo, ch.Branch, "mine.txt"))
	assert.Equal(t, "from the helper", fileAt(t, repo, ch.Branch, "helper.txt"))
	missing(t, w.Dir(), "")
}

// Opening the same run's agent durable again, as a step run twice does,
// returns the workspace open: one worktree, one branch. Once it is
// closed, an Open again returns it closed, with its changes.
func TestDurableOpenTwiceIsOneWorkspace(t *testing.T) {
	repo := newRepo(t)
	p := newProvider(t)
	first := openDurable(t, p, repo, "agent", nil)
	write(t, first.Dir(), "x.txt", "x\n")
	second := openDurable(t, p, repo, "agent", nil)
	assert.Equal(t, first.Handle(), second.Handle())
	assert.Equal(t, first.Dir(), second.Dir())
	assert.Equal(t, "x\n", read(t, second.Dir(), "x.txt"))
	assert.Len(t, branches(t, repo), 1)
	assert.Len(t, worktrees(t, repo), 2, "the main tree and one workspace")

	ch := closeWS(t, second)
	again := openDurable(t, p, repo, "agent", nil)
	assert.Equal(t, first.Handle(), again.Handle())
	assert.Equal(t, ch, closeWS(t, again), "closed, it returns the changes it recorded")
	assert.Equal(t, []string{"x.txt"}, ch.Added)
	assert.Equal(t, ch, closeWS(t, first), "the first object finds it closed too")
	assert.Len(t, worktrees(t, repo), 1)
}

// A durable workspace belongs to its run's workflow, not to a process:
// Prune leaves it when the provider that opened it is gone, and another
// provider reopens it.
func TestPruneLeavesDurableWorkspaces(t *testing.T) {
	repo, state := newRepo(t), t.TempDir()
	gone := newProviderAt(t, state)
	w := openDurable(t, gone, repo, "agent", nil)
	write(t, w.Dir(), "x.txt", "x\n")
	require.NoError(t, gone.Close()) // its owner lock is free, as a killed process leaves it

	p := newProviderAt(t, state)
	got, err := p.Prune(context.Background())
	require.NoError(t, err)
	assert.Empty(t, got)
	assert.Equal(t, "x\n", read(t, w.Dir(), "x.txt"))

	again := reopen(t, p, w.Handle())
	assert.Equal(t, w.Dir(), again.Dir())
	ch := closeWS(t, again)
	assert.Equal(t, []string{"x.txt"}, ch.Added)
}

// A Close again, in another provider through the handle, returns the
// changes the first recorded, and records nothing more; the closed
// workspace refuses everything else.
func TestDurableCloseTwiceRecordsOnce(t *testing.T) {
	repo, state := newRepo(t), t.TempDir()
	p := newProviderAt(t, state)
	w := openDurable(t, p, repo, "agent", nil)
	base := w.(*workspace.Workspace).Base()
	write(t, w.Dir(), "x.txt", "x\n")
	first := closeWS(t, w)

	q := newProviderAt(t, state)
	closed := reopen(t, q, w.Handle())
	second, err := closed.Close(context.Background())
	require.NoError(t, err)
	assert.Equal(t, first, second)
	assert.Equal(t, "1", gitIn(t, repo, "rev-list", "--count", base+".."+first.Branch), "one commit of the work")

	_, err = closed.Merge(context.Background(), first)
	require.ErrorIs(t, err, agenttypes.ErrWorkspace)
	assert.Contains(t, err.Error(), "is closed")
	_, err = q.Open(context.Background(), agenttypes.WorkspaceRequest{Run: "run-1", Agent: "child", Parent: closed})
	require.ErrorIs(t, err, agenttypes.ErrWorkspace)
	assert.Contains(t, err.Error(), "closed")

	require.NoError(t, q.Discard(context.Background(), second))
	_, err = q.Reopen(context.Background(), w.Handle())
	require.ErrorIs(t, err, agenttypes.ErrWorkspace)
	assert.Contains(t, err.Error(), "discarded", "Discard takes what the closed workspace kept")
}

// A handle of another state directory, or not a handle at all, is
// refused with what to do, before anything is read; nothing changes.
func TestReopenRefusesHandlesNotOfItsStateDirectory(t *testing.T) {
	repo, state := newRepo(t), t.TempDir()
	p := newProviderAt(t, state)
	other := openDurable(t, newProvider(t), repo, "other", nil)
	plain := open(t, p, repo, "plain", nil)
	assert.Empty(t, plain.Handle(), "a workspace not durable has no handle")
	mine := openDurable(t, p, repo, "mine", nil)
	id, _, _ := strings.Cut(mine.Handle(), "/")
	// A closed workspace's file one directory up from where they live: a
	// handle that reached it would reopen it.
	write(t, state, "planted.json", `{"record":{"name":"planted"},"changes":{}}`)
	before := stateFiles(t, state)

	_, err := p.Reopen(context.Background(), other.Handle())
	require.ErrorIs(t, err, agenttypes.ErrWorkspace)
	assert.Contains(t, err.Error(), "opened in another state directory")
	assert.Contains(t, err.Error(), "share one state directory")

	for _, handle := range []string{"", "x", id, id + "/", "/" + id, "0123/abc", id + "/../planted", id + "/..", id + "/.planted",
		id + "/a/b", id + `/a\b`, id + "/" + strings.Repeat("a", 300), strings.ToUpper(id) + "/x"} {
		_, err := p.Reopen(context.Background(), handle)
		require.ErrorIs(t, err, agenttypes.ErrWorkspace, handle)
		assert.Contains(t, err.Error(), "is not a workspace handle", handle)
		assert.Contains(t, err.Error(), "STATE-ID/NAME", handle)
	}
	_, err = p.Reopen(context.Background(), id+"/run-1-plain")
	require.ErrorIs(t, err, agenttypes.ErrWorkspace)
	assert.Contains(t, err.Error(), "was not opened durable")
	_, err = p.Reopen(context.Background(), id+"/nothing")
	require.ErrorIs(t, err, agenttypes.ErrWorkspace)
	assert.Contains(t, err.Error(), "no workspace nothing")
	assert.Equal(t, before, stateFiles(t, state))
	closeWS(t, plain)
	closeWS(t, mine)
}

// A child started in another process, from a reopened parent, leaves its
// base in the parent's record: the parent's next commit, in this
// process, takes it as a parent, so the merge of the child's changes has
// the child's start as its base and does not conflict with the parent's
// own later edit of what the child started from.
func TestDurableChildBaseFromAnotherProcessIsTheMergeBase(t *testing.T) {
	repo, state := newRepo(t), t.TempDir()
	p := newProviderAt(t, state)
	parent := openDurable(t, p, repo, "parent", nil)
	write(t, parent.Dir(), "f.txt", replaceLine(lines, 3, "three"))
	h := startHelper(t, state, "child", parent.Handle())
	childHandle := h.line(t)
	h.wait(t)

	write(t, parent.Dir(), "f.txt", replaceLine(lines, 3, "THREE"))
	child := reopen(t, p, childHandle)
	assert.Equal(t, replaceLine(lines, 3, "three"), read(t, child.Dir(), "f.txt"), "the child started from the parent's uncommitted state")
	write(t, child.Dir(), "f.txt", replaceLine(replaceLine(lines, 3, "three"), 8, "eight"))
	ch := closeWS(t, child)
	assert.Equal(t, 1, ch.Insertions, "the child's changes are its own")

	res, err := parent.Merge(context.Background(), ch)
	require.NoError(t, err)
	require.Empty(t, res.Conflicts)
	assert.Equal(t, replaceLine(replaceLine(lines, 3, "THREE"), 8, "eight"), read(t, parent.Dir(), "f.txt"))
	closeWS(t, parent)
}

// Two processes that start children of one durable workspace and merge
// them back, at once and round after round, take turns: git never finds
// the other's index or ref locked, and every round's work is there.
func TestDurableWorkspaceLockSerialisesProcesses(t *testing.T) {
	const rounds = 4
	repo, state := newRepo(t), t.TempDir()
	p := newProviderAt(t, state)
	w := openDurable(t, p, repo, "parent", nil)
	var hs []*helper
	for _, tag := range []string{"a", "b"} {
		h := startHelper(t, state, "rounds", w.Handle(), tagEnv+"="+tag, roundsEnv+"="+strconv.Itoa(rounds))
		require.Equal(t, "ready", h.line(t))
		hs = append(hs, h)
	}
	for _, h := range hs {
		_, err := io.WriteString(h.stdin, "go\n")
		require.NoError(t, err)
	}
	for _, h := range hs {
		h.wait(t)
	}

	ch := closeWS(t, w)
	var want []string
	for _, tag := range []string{"a", "b"} {
		for i := range rounds {
			want = append(want, fmt.Sprintf("%s-%d.txt", tag, i), fmt.Sprintf("c-%s-%d.txt", tag, i))
		}
	}
	slices.Sort(want)
	assert.Equal(t, want, ch.Added)
}

// DiscardRun takes the run's durable workspaces, whoever opened them:
// an open one with its worktree and branch, unless a worker has it in
// hand; a closed one with its branch and what it kept.
func TestDiscardRunRemovesDurableWorkspaces(t *testing.T) {
	repo, state := newRepo(t), t.TempDir()
	opener := newProviderAt(t, state)
	open := openDurable(t, opener, repo, "open", nil)
	write(t, open.Dir(), "x.txt", "x\n")
	done := openDurable(t, opener, repo, "done", nil)
	write(t, done.Dir(), "y.txt", "y\n")
	closeWS(t, done)
	require.Len(t, branches(t, repo), 2)

	p := newProviderAt(t, state)
	ctx := context.Background()
	name := strings.TrimPrefix(open.Handle(), strings.Split(open.Handle(), "/")[0]+"/")
	inHand, err := os.OpenFile(filepath.Join(state, "locks", name+".lock"), os.O_RDWR, 0)
	require.NoError(t, err)
	require.NoError(t, syscall.Flock(int(inHand.Fd()), syscall.LOCK_EX))
	err = p.DiscardRun(ctx, "run-1", "open")
	require.ErrorIs(t, err, agenttypes.ErrWorkspace)
	assert.Contains(t, err.Error(), "in use by a worker now")
	assert.DirExists(t, open.Dir())
	require.NoError(t, inHand.Close())

	require.NoError(t, p.DiscardRun(ctx, "run-1", ""))
	missing(t, open.Dir(), "")
	assert.Empty(t, branches(t, repo))
	assert.Len(t, worktrees(t, repo), 1)
	for _, dir := range []string{"records", "closed", "locks", "patches"} {
		entries, err := os.ReadDir(filepath.Join(state, dir))
		require.NoError(t, err)
		assert.Empty(t, entries, dir)
	}
	_, err = p.Reopen(ctx, open.Handle())
	assert.ErrorContains(t, err, "discarded")
}

// An Open of a durable workspace that a killed process left unfinished
// is undone by the Open again, which makes the workspace anew.
func TestDurableOpenAgainUndoesAnUnfinishedOpen(t *testing.T) {
	repo, state := newRepo(t), t.TempDir()
	p := newProviderAt(t, state)
	w := openDurable(t, p, repo, "agent", nil)
	write(t, w.Dir(), "half.txt", "half\n")
	name := strings.SplitN(w.Handle(), "/", 2)[1]
	recPath := filepath.Join(state, "records", name+".json")
	rec := read(t, state, filepath.Join("records", name+".json"))
	require.Contains(t, rec, `"ready":true`)
	require.NoError(t, os.WriteFile(recPath, []byte(strings.Replace(rec, `"ready":true`, `"ready":false`, 1)), 0o600))
	_, err := p.Reopen(context.Background(), w.Handle())
	assert.ErrorContains(t, err, "has not finished opening")

	again := openDurable(t, p, repo, "agent", nil)
	assert.Equal(t, w.Handle(), again.Handle(), "the name is free again")
	missing(t, again.Dir(), "half.txt")
	ch := closeWS(t, again)
	assert.True(t, ch.Empty())
}

// A Close killed as it removed the worktree, its work committed, leaves
// part of the tree: a Close again, in another provider, returns the
// changes of that commit, and records nothing of what the removal took.
func TestDurableCloseAgainAfterAKilledRemovalReturnsTheCommit(t *testing.T) {
	repo, state := newRepo(t), t.TempDir()
	p := newProviderAt(t, state)
	w := openDurable(t, p, repo, "agent", nil)
	write(t, w.Dir(), "x.txt", "x\n")
	write(t, w.Dir(), "f.txt", replaceLine(lines, 3, "three"))
	write(t, w.Dir(), "build/out", "o\n")
	want, err := workspace.RecordClose(context.Background(), w.(*workspace.Workspace))
	require.NoError(t, err)
	require.Equal(t, []string{"x.txt"}, want.Added)
	require.Equal(t, []string{"f.txt"}, want.Modified)
	require.Equal(t, []string{"build/"}, want.Ignored)
	for _, gone := range []string{"keep.txt", "sub", "x.txt", "f.txt", ".git"} { // a removal killed half way
		require.NoError(t, os.RemoveAll(filepath.Join(w.Dir(), gone)))
	}

	q := newProviderAt(t, state)
	again := reopen(t, q, w.Handle())
	_, err = again.Merge(context.Background(), want)
	require.ErrorIs(t, err, agenttypes.ErrWorkspace)
	assert.Contains(t, err.Error(), "is closed", "a workspace being closed takes nothing more")
	got := closeWS(t, again)
	assert.Equal(t, want, got)
	assert.Empty(t, got.Deleted)
	assert.Equal(t, want.Head, gitIn(t, repo, "rev-parse", want.Branch), "nothing more committed")
	missing(t, w.Dir(), "")
	assert.Equal(t, []string{realPath(t, repo)}, worktrees(t, repo))
	assert.Equal(t, got, closeWS(t, w), "the first provider's object finds it closed")
}

// DiscardRun removes the lock files of what it discards that killed
// processes left: a closed workspace's, and its agent's Open's. Those of
// agents it leaves stay.
func TestDiscardRunRemovesLeftoverLocks(t *testing.T) {
	repo, state := newRepo(t), t.TempDir()
	p := newProviderAt(t, state)
	done := openDurable(t, p, repo, "done", nil)
	closeWS(t, done)
	other := openDurable(t, p, repo, "other", nil)
	for _, left := range []string{workspaceLock(state, done), p.OpenLock("run-1", "done"), p.OpenLock("run-1", "other")} {
		write(t, state, "locks/"+filepath.Base(left), "")
	}

	require.NoError(t, p.DiscardRun(context.Background(), "run-1", "done"))
	assert.ElementsMatch(t, []string{filepath.Base(workspaceLock(state, other)), filepath.Base(p.OpenLock("run-1", "other"))},
		lockFiles(t, state))
	require.NoError(t, p.DiscardRun(context.Background(), "run-1", ""))
	assert.Empty(t, lockFiles(t, state))
	assert.Empty(t, branches(t, repo))
}
