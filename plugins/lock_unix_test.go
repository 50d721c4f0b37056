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

// A named pipe in a plugin's place is refused at once, not hashed: every
// command hashes the project's plugins to decide on trust.
func TestChecksumOfANamedPipeIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), plugins.Prefix+"pipe")
	require.NoError(t, syscall.Mkfifo(path, 0o700))
	done := make(chan error, 1)
	go func() {
		_, err := plugins.Checksum(path)
		done <- err
	}()
	select {
	case err := <-done:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "is a named pipe, not an executable file")
	case <-time.After(5 * time.Second):
		t.Fatal("hashing a plugin blocked on a named pipe")
	}
}
