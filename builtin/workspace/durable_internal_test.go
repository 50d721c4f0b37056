//go:build unix

package workspace

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A wait for a lock ends with its context, and the abandoned wait lets
// the lock go once it gets it.
func TestWaitLockEndsWithItsContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.lock")
	held, err := waitLock(context.Background(), path, true)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = waitLock(ctx, path, false)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "waiting for the lock "+path)

	require.NoError(t, held.Close())
	again, err := waitLock(context.Background(), path, false)
	require.NoError(t, err, "the abandoned wait let the lock go")
	require.NoError(t, again.Close())
}

// A lock whose holder removed its file, as a Close does, is no lock: a
// waiter blocked on it that may not make it finds it gone; one that
// may, holds the file under the name now.
func TestWaitLockOnAFileItsHolderRemoved(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.lock")
	type result struct {
		f   *os.File
		err error
	}
	for _, create := range []bool{false, true} {
		held, err := waitLock(context.Background(), path, true)
		require.NoError(t, err)
		got := make(chan result, 1)
		waited := make(chan struct{})
		go func() {
			defer close(waited)
			f, err := waitLock(context.Background(), path, create)
			got <- result{f, err}
		}()
		// Only a waiter that opened the file before it went, and is
		// blocked on it, holds a file no longer under its name.
		waitBlockedOnLock(t, path, os.Getpid(), waited)
		require.NoError(t, os.Remove(path))
		require.NoError(t, held.Close())
		r := <-got
		if !create {
			require.ErrorIs(t, r.err, fs.ErrNotExist)
			continue
		}
		require.NoError(t, r.err)
		fi, err := r.f.Stat()
		require.NoError(t, err)
		named, err := os.Stat(path)
		require.NoError(t, err)
		assert.True(t, os.SameFile(fi, named))
		require.NoError(t, r.f.Close())
	}
}
