//go:build unix

package builtin_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

func TestACancelledChildLeavesNoProcessNoWorktreeAndKeepsItsWork(t *testing.T) {
	repo := userRepo(t, map[string]string{"f.txt": tenLines})
	model := byTask(map[string][]scripted.Step{
		"lead": {
			call("delegate", map[string]any{"return": "json", "tasks": []map[string]string{{"label": "hang", "type": "hanger", "prompt": "work then hang"}}}),
			{Text: "the child was stopped"},
		},
		"work then hang": {
			call("write", map[string]string{"path": "partial.txt", "content": "half done\n"}),
			call("run", map[string]string{"command": `sh -c "sleep 300 & echo $! > bg.pid; sleep 300"`}),
			{Text: "never reached"},
		},
	})
	// A type that may start a shell.
	hanger := agenttypes.Type{Name: "hanger", Description: "hangs", Tools: []string{"write", "run"}, Run: agenttypes.RunPolicy{Allow: []string{"sh -c"}}}
	mgr := workspaceManager(t, model, "", hanger)
	lead, err := mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "general", Task: "lead", Dir: repo})
	require.NoError(t, err)

	var child manager.Info
	var pid int
	// The shell makes bg.pid before it writes the number in it.
	require.Eventually(t, func() bool {
		for _, c := range mgr.List(manager.Filter{ParentID: lead.ID()}) {
			text, err := os.ReadFile(filepath.Join(c.Dir, "bg.pid"))
			if err != nil || !strings.HasSuffix(string(text), "\n") {
				continue
			}
			if n, err := strconv.Atoi(strings.TrimSpace(string(text))); err == nil {
				child, pid = c, n
				return true
			}
		}
		return false
	}, time.Minute, 5*time.Millisecond, "the child's command starts its background process")
	require.NoError(t, mgr.Cancel(child.ID))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := mgr.Wait(ctx, child.ID)
	require.NoError(t, err)
	assert.Equal(t, manager.Cancelled, res.State)
	require.NotNil(t, res.Changes, "a cancelled child's work is recorded")
	assert.Contains(t, res.Changes.Added, "partial.txt")
	assert.Equal(t, "half done", git(t, repo, "show", res.Changes.Head+":partial.txt"), "its partial work is on its branch")
	_, err = os.Stat(child.Dir)
	assert.ErrorIs(t, err, os.ErrNotExist, "its worktree is gone")
	assert.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "the command's background process is gone")

	lres, err := lead.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, manager.Completed, lres.State, lres.Error)
	assert.Equal(t, tenLines, readFile(t, repo, "f.txt"))
}
