package workspace_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/workspace"
)

const (
	killedOpenerEnv = "WORKSPACE_TEST_KILLED_OPENER"
	stateEnv        = "WORKSPACE_TEST_STATE"
	repoEnv         = "WORKSPACE_TEST_REPO"
)

// runKilledOpener is the test binary run as the process that is killed:
// it opens a workspace, writes into it, says where, and waits to be
// killed.
func runKilledOpener() {
	p, err := workspace.New(workspace.Config{StateDir: os.Getenv(stateEnv), ExcludesFile: os.DevNull})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ws, err := p.Open(context.Background(), agenttypes.WorkspaceRequest{Run: "killed", Agent: "a", Dir: os.Getenv(repoEnv)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := os.WriteFile(filepath.Join(ws.Dir(), "partial.txt"), []byte("partial work\n"), 0o644); err != nil {
		os.Exit(2)
	}
	fmt.Println(ws.Dir())
	_, _ = io.Copy(io.Discard, os.Stdin) // until killed
	os.Exit(3)
}

// A workspace whose process was killed is found by the next Prune, its
// partial work committed to its branch, and removed with git.
func TestPruneRecoversTheWorkspaceOfAKilledProcess(t *testing.T) {
	repo, state := newRepo(t), t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), killedOpenerEnv+"=1", stateEnv+"="+state, repoEnv+"="+repo)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "the opener said nothing")
	dir := strings.TrimSpace(line)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	assert.Equal(t, "partial work\n", read(t, dir, "partial.txt"), "the killed process left its workspace")

	p := newProviderAt(t, state)
	got, err := p.Prune(context.Background())
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "killed", got[0].Run)
	assert.Equal(t, "a", got[0].Agent)
	ch := got[0].Changes
	assert.Equal(t, []string{"partial.txt"}, ch.Added)
	assert.Equal(t, "troupe/killed/a", ch.Branch)
	assert.Equal(t, "partial work", fileAt(t, repo, "troupe/killed/a", "partial.txt"))
	missing(t, dir, "")
	assert.Equal(t, []string{realPath(t, repo)}, worktrees(t, repo))
	assertNothingLeft(t, filepath.Join(state))
	owners, err := os.ReadDir(filepath.Join(state, "owners"))
	require.NoError(t, err)
	assert.Len(t, owners, 1, "only the live provider's lock is left")

	got, err = p.Prune(context.Background())
	require.NoError(t, err)
	assert.Empty(t, got, "a second Prune finds nothing")
}

// Prune leaves the workspaces of live providers alone, its own and
// others'; a provider closed with workspaces open leaves them to Prune.
func TestPruneLeavesLiveWorkspaces(t *testing.T) {
	repo, state := newRepo(t), t.TempDir()
	live := newProviderAt(t, state)
	w := open(t, live, repo, "live", nil)
	write(t, w.Dir(), "x.txt", "x\n")
	other := newProviderAt(t, state)
	mine := open(t, other, repo, "mine", nil)

	got, err := other.Prune(context.Background())
	require.NoError(t, err)
	assert.Empty(t, got)
	assert.Equal(t, "x\n", read(t, w.Dir(), "x.txt"))
	assert.Len(t, worktrees(t, repo), 3)

	require.NoError(t, live.Close())
	got, err = other.Prune(context.Background())
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "live", got[0].Agent)
	assert.Equal(t, []string{"x.txt"}, got[0].Changes.Added)
	missing(t, w.Dir(), "")
	closeWS(t, mine)
}

// A workspace whose process was killed as its Close removed the
// worktree is recovered by Prune with the changes that Close committed,
// not with what the removal left.
func TestPruneRecoversAHalfRemovedWorkspaceFromItsCommit(t *testing.T) {
	repo, state := newRepo(t), t.TempDir()
	gone := newProviderAt(t, state)
	w := open(t, gone, repo, "a", nil)
	write(t, w.Dir(), "x.txt", "x\n")
	want, err := workspace.RecordClose(context.Background(), w)
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(filepath.Join(w.Dir(), "keep.txt")))
	require.NoError(t, os.RemoveAll(filepath.Join(w.Dir(), "x.txt")))
	require.NoError(t, gone.Close()) // as a killed process leaves it

	got, err := newProviderAt(t, state).Prune(context.Background())
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, want, got[0].Changes)
	missing(t, w.Dir(), "")
	assert.Equal(t, []string{realPath(t, repo)}, worktrees(t, repo))
}

// lockFile holds the lock of the file at path, made if need be, as a
// live process does, until the test ends.
func lockFile(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
}

// lockFiles lists the state directory's lock files of workspaces.
func lockFiles(t *testing.T, state string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(state, "locks"))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// workspaceLock is the lock file of the durable workspace w.
func workspaceLock(state string, w agenttypes.DurableWorkspace) string {
	_, name, _ := strings.Cut(w.Handle(), "/")
	return filepath.Join(state, "locks", name+".lock")
}

// Prune removes the lock files that nothing needs and nobody holds: a
// closed workspace's, which a process killed between removing its
// record and its lock leaves, and an Open's, which one killed while it
// held it leaves. An open workspace's lock stays, held or not, and so
// does any lock a live process holds.
func TestPruneRemovesLeftoverLocks(t *testing.T) {
	repo, state := newRepo(t), t.TempDir()
	p := newProviderAt(t, state)
	open := openDurable(t, p, repo, "open", nil)
	done := openDurable(t, p, repo, "done", nil)
	closeWS(t, done)
	write(t, state, "locks/"+filepath.Base(workspaceLock(state, done)), "")
	write(t, state, "locks/"+filepath.Base(p.OpenLock("run-1", "killed")), "")
	held := p.OpenLock("run-1", "opening")
	lockFile(t, held)
	base := func(paths ...string) []string {
		for i, p := range paths {
			paths[i] = filepath.Base(p)
		}
		return paths
	}
	require.ElementsMatch(t, base(workspaceLock(state, open), workspaceLock(state, done), p.OpenLock("run-1", "killed"), held),
		lockFiles(t, state))

	got, err := p.Prune(context.Background())
	require.NoError(t, err)
	assert.Empty(t, got)
	assert.ElementsMatch(t, base(workspaceLock(state, open), held), lockFiles(t, state))
	write(t, open.Dir(), "x.txt", "x\n")
	assert.Equal(t, []string{"x.txt"}, closeWS(t, open).Added, "the open workspace works as before")
}
