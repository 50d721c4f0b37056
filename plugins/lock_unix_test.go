//go:build unix

package plugins_test

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/plugins"
)

// A named pipe in the place of the lock file is refused at once: reading
// it would wait for a writer forever, and so would every command.
func TestALockFileThatIsANamedPipeIsRefused(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "plugins.lock")
	require.NoError(t, syscall.Mkfifo(lock, 0o600))
	done := make(chan error, 1)
	go func() {
		_, err := plugins.ReadLock(lock)
		done <- err
	}()
	select {
	case err := <-done:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "is a named pipe, not a lock file")
	case <-time.After(5 * time.Second):
		t.Fatal("reading the lock file blocked on a named pipe")
	}
}
