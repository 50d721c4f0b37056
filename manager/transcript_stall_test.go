//go:build unix

package manager_test

import (
	"context"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

// A disk that stalls: the transcript is a named pipe nobody reads, so the
// writer's open blocks. Each ending agent gives up waiting for its events
// to reach the disk after a bound, and leaves nothing behind waiting for
// it.
func TestAStalledDiskPilesUpNothingBehindEndingAgents(t *testing.T) {
	dir := t.TempDir()
	// Each agent's events come to more than 64 KiB: an agent never
	// writes them itself, so none is held by the stalled disk.
	big := strings.Repeat("x", 40<<10)
	model := scripted.New(
		scripted.Step{Calls: []scripted.Call{{Name: "echo", Args: scripted.JSON(map[string]string{"text": big})}}},
		scripted.Step{Text: "done"},
	)
	f := newFixture(t, model, func(c *manager.Config) { c.TranscriptDir = dir })
	path := f.mgr.TranscriptPath()
	require.NoError(t, syscall.Mkfifo(path, 0o600))
	// Unblocks the writer at the end, so the manager can close.
	t.Cleanup(func() {
		r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			t.Cleanup(func() { r.Close() })
		}
	})
	const n = 8
	agents := make([]*manager.Agent, n)
	for i := range agents {
		a, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "go"})
		require.NoError(t, err)
		agents[i] = a
	}
	for _, a := range agents {
		res, err := a.Wait(context.Background())
		require.NoError(t, err)
		require.Equal(t, manager.Completed, res.State, res.Error)
	}
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	assert.Zero(t, strings.Count(stacks, "transcriptWriter).synced"), "a goroutine per ended agent still waits for the disk")
}
