//go:build unix

package models_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/builtin/models"
)

// loadWithin runs LoadConfig and fails the test, rather than hanging it,
// when LoadConfig does not return in time.
func loadWithin(t *testing.T, user, project string) (*models.Config, error) {
	t.Helper()
	type result struct {
		cfg *models.Config
		err error
	}
	done := make(chan result, 1)
	go func() {
		cfg, err := models.LoadConfig(user, project)
		done <- result{cfg, err}
	}()
	select {
	case r := <-done:
		return r.cfg, r.err
	case <-time.After(5 * time.Second):
		// Open the pipe for writing so the stuck reader returns and the
		// test ends; it has failed already.
		if f, err := os.OpenFile(project, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		t.Fatal("LoadConfig hung on a file that is not a regular file")
		return nil, nil
	}
}

func TestConfigFileMustBeARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	folder := filepath.Join(dir, "folder.yaml")
	require.NoError(t, os.Mkdir(folder, 0o755))
	for _, tc := range []struct{ path, kind string }{{fifo, "named pipe"}, {folder, "directory"}} {
		_, err := loadWithin(t, "", tc.path)
		require.ErrorIs(t, err, models.ErrConfig)
		assert.Contains(t, err.Error(), tc.path+": is a "+tc.kind+", not a regular file")
	}
}

func TestConfigFileSizeIsCapped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	big := make([]byte, models.MaxConfigSize+1)
	for i := range big {
		big[i] = '#'
	}
	require.NoError(t, os.WriteFile(path, big, 0o644))
	_, err := loadWithin(t, "", path)
	require.ErrorIs(t, err, models.ErrConfig)
	assert.Contains(t, err.Error(), "config files are limited to 1 MiB")

	require.NoError(t, os.WriteFile(path, big[:models.MaxConfigSize], 0o644))
	_, err = loadWithin(t, "", path)
	require.NoError(t, err, "a comment-only file at the limit is read")
}
