//go:build unix

package gitsafe

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An include naming a named pipe would hold git's configuration listing
// open until something writes to the pipe: New gives up on its own,
// long before the caller's context ends, and says why.
func TestNewGivesUpOnAConfigurationIncludeThatNeverAnswers(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("git", "init", "-q", dir)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	fifo := filepath.Join(t.TempDir(), "pipe")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	f, err := os.OpenFile(filepath.Join(dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("[include]\n\tpath = " + fifo + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())

	defer func(d time.Duration) { configListTime = d }(configListTime)
	configListTime = 200 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = New(ctx, dir, Options{})
	require.ErrorIs(t, err, ErrConfigStuck)
	assert.Contains(t, err.Error(), "named pipe")
	assert.NoError(t, ctx.Err(), "New gave up by itself, not when the caller's context ended")
}
