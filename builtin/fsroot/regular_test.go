package fsroot_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/builtin/fsroot"
)

// within fails the test when fn does not return within a few seconds:
// what it opens must never block on a named pipe.
func within(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("blocked on a named pipe")
	}
}

func TestOpenRegularRefusesWhatIsNotAFileWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	mkfifo(t, fifo)
	within(t, func() {
		_, fi, err := fsroot.OpenRegular(nil, fifo)
		require.ErrorIs(t, err, fsroot.ErrNotRegular)
		assert.Contains(t, err.Error(), "named pipe")
		assert.Equal(t, "named pipe", fsroot.Kind(fi.Mode()))
	})
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer root.Close()
	within(t, func() {
		_, _, err := fsroot.OpenRegular(root, "pipe")
		require.ErrorIs(t, err, fsroot.ErrNotRegular)
	})
	_, _, err = fsroot.OpenRegular(nil, dir)
	require.ErrorIs(t, err, fsroot.ErrNotRegular, "a directory is refused too")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600))
	f, fi, err := fsroot.OpenRegular(root, "f")
	require.NoError(t, err)
	assert.EqualValues(t, 1, fi.Size())
	require.NoError(t, f.Close())
}

func TestKindNamesEveryMode(t *testing.T) {
	tests := []struct {
		mode fs.FileMode
		want string
	}{
		{0o644, "regular file"},
		{fs.ModeDir | 0o755, "directory"},
		{fs.ModeSymlink, "symlink"},
		{fs.ModeNamedPipe, "named pipe"},
		{fs.ModeSocket, "socket"},
		{fs.ModeDevice | fs.ModeCharDevice, "device"},
		{fs.ModeIrregular, "special file"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, fsroot.Kind(tt.mode), tt.mode.String())
	}
}
