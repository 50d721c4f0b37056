package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/workspace"
)

// Find, in another provider, returns the durable workspace of a run's
// agent: an open one as it is, a closed one with the changes its Close
// recorded; nil for an agent that has none, even one whose name makes
// the same workspace name. Each names the run and agent it was opened
// for.
func TestFindReturnsARunsAgentsDurableWorkspace(t *testing.T) {
	repo, state := newRepo(t), t.TempDir()
	p := newProviderAt(t, state)
	open := openDurable(t, p, repo, "open", nil)
	write(t, open.Dir(), "x.txt", "x\n")
	done := openDurable(t, p, repo, "done", nil)
	write(t, done.Dir(), "y.txt", "y\n")
	doneChanges := closeWS(t, done)
	owner := func(w agenttypes.Workspace) [2]string {
		run, agent := w.(agenttypes.DurableWorkspace).Owner()
		return [2]string{run, agent}
	}
	assert.Equal(t, [2]string{"run-1", "open"}, owner(open))

	q := newProviderAt(t, state)
	ctx := context.Background()
	found, err := q.Find(ctx, "run-1", "open")
	require.NoError(t, err)
	require.NotNil(t, found)
	assert.Equal(t, open.Handle(), found.(agenttypes.DurableWorkspace).Handle())
	assert.Equal(t, [2]string{"run-1", "open"}, owner(found))
	assert.Equal(t, "x\n", read(t, found.Dir(), "x.txt"))
	assert.Equal(t, [2]string{"run-1", "open"}, owner(reopen(t, q, open.Handle())))

	closed, err := q.Find(ctx, "run-1", "done")
	require.NoError(t, err)
	require.NotNil(t, closed)
	assert.Equal(t, [2]string{"run-1", "done"}, owner(closed))
	assert.Equal(t, doneChanges, closeWS(t, closed), "closed, it returns the changes it recorded")

	for _, who := range [][2]string{{"run-1", "none"}, {"run-2", "open"}, {"run-1", "open!"}} {
		w, err := q.Find(ctx, who[0], who[1])
		require.NoError(t, err, who)
		assert.Nil(t, w, who)
	}
	assert.Equal(t, []string{"x.txt"}, closeWS(t, found).Added)
}

// Find waits for an Open of the same run's agent under way in another
// process (its setup command running), and returns what it opened: it
// neither finds nothing nor takes the unfinished Open for one a killed
// process left.
func TestFindWaitsForAnOpenInAnotherProcess(t *testing.T) {
	repo, state, cache := newRepo(t), t.TempDir(), t.TempDir()
	fifo := filepath.Join(cache, "setup")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	h := startHelper(t, state, "open", "", repoEnv+"="+repo, setupEnv+"=cat "+fifo, cacheEnv+"="+cache)
	require.Equal(t, "ready", h.line(t))
	h.tell(t, "go")
	setup := openSetupInput(t, fifo, h)
	defer setup.Close()

	p := newProviderAt(t, state)
	type result struct {
		w   agenttypes.Workspace
		err error
	}
	got, ended := make(chan result, 1), make(chan struct{})
	go func() {
		defer close(ended)
		w, err := p.Find(context.Background(), "run-1", "agent")
		got <- result{w, err}
	}()
	locks, err := filepath.Glob(filepath.Join(state, "locks", "open-*.lock"))
	require.NoError(t, err)
	require.Len(t, locks, 1, "the Open holds its lock")
	workspace.WaitBlockedOnLock(t, locks[0], os.Getpid(), ended)
	require.NoError(t, setup.Close()) // the setup command ends, and the Open with it
	handle := h.line(t)
	h.wait(t)

	var r result
	select {
	case r = <-got:
	case <-time.After(helperBound):
		t.Fatalf("Find did not return within %s of the Open's end", helperBound)
	}
	require.NoError(t, r.err)
	require.NotNil(t, r.w, "Find found the Open's workspace")
	assert.Equal(t, handle, r.w.(agenttypes.DurableWorkspace).Handle())
	assert.DirExists(t, r.w.Dir())
	assert.Len(t, branches(t, repo), 1)
	assert.True(t, closeWS(t, r.w).Empty())
}

// openSetupInput opens the fifo a helper's setup command reads, once the
// command has it open: the helper's Open is then under way, and holds
// its lock. Closing it ends the command.
func openSetupInput(t *testing.T, fifo string, h *helper) *os.File {
	t.Helper()
	opened := make(chan *os.File, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			f = nil
		}
		opened <- f
	}()
	select {
	case f := <-opened:
		require.NotNil(t, f, "opening the setup command's input")
		return f
	case <-h.done:
	case <-time.After(helperBound):
	}
	// Let the open go, with a reader of the test's own.
	if r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
		if f := <-opened; f != nil {
			f.Close()
		}
		r.Close()
	}
	h.wait(t)
	t.Fatal("the helper's setup command never read its input")
	return nil
}

// Two processes that open the same run's agent durable at once get one
// workspace: one branch, one worktree, one handle.
func TestDurableOpenAtOnceInTwoProcessesIsOneWorkspace(t *testing.T) {
	repo, state := newRepo(t), t.TempDir()
	var hs []*helper
	for range 2 {
		h := startHelper(t, state, "open", "", repoEnv+"="+repo)
		require.Equal(t, "ready", h.line(t))
		hs = append(hs, h)
	}
	for _, h := range hs {
		h.tell(t, "go")
	}
	var handles []string
	for _, h := range hs {
		handles = append(handles, h.line(t))
		h.wait(t)
	}
	assert.Equal(t, handles[0], handles[1])
	assert.Len(t, branches(t, repo), 1)
	assert.Len(t, worktrees(t, repo), 2, "the main tree and one workspace")
	records, err := os.ReadDir(filepath.Join(state, "records"))
	require.NoError(t, err)
	assert.Len(t, records, 1)

	p := newProviderAt(t, state)
	assert.True(t, closeWS(t, reopen(t, p, handles[0])).Empty())
}
