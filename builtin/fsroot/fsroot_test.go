package fsroot_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/builtin/fsroot"
)

// tree builds a root with files, a nested dir, and symlinks of every kind,
// plus a secret file outside the root. It returns the root dir and the
// secret's path.
func tree(t *testing.T) (string, string) {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "root")
	secret := filepath.Join(base, "secret.txt")
	write := func(p, s string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
	}
	write(secret, "root:x:0:0:secret\n")
	write(filepath.Join(dir, "a.txt"), "hello\n")
	write(filepath.Join(dir, "sub", "b.txt"), "bee\n")
	write(filepath.Join(dir, "sub", "deep", "c.txt"), "sea\n")
	if runtime.GOOS != "windows" {
		require.NoError(t, os.Symlink(secret, filepath.Join(dir, "passwd")))
		require.NoError(t, os.Symlink("../secret.txt", filepath.Join(dir, "relsecret")))
		require.NoError(t, os.Symlink("a.txt", filepath.Join(dir, "alias.txt")))
		require.NoError(t, os.Symlink("../a.txt", filepath.Join(dir, "sub", "up.txt")))
		require.NoError(t, os.Symlink("..", filepath.Join(dir, "sub", "loop")))
		require.NoError(t, os.Symlink(base, filepath.Join(dir, "outdir")))
	}
	return dir, secret
}

func open(t *testing.T, dir string) *fsroot.Root {
	t.Helper()
	r, err := fsroot.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	return r
}

func TestOpenErrors(t *testing.T) {
	dir, _ := tree(t)
	tests := []struct {
		name, dir, want string
	}{
		{"empty", "", "pass the directory"},
		{"missing", filepath.Join(dir, "nope"), "does not exist; pass an existing directory"},
		{"file", filepath.Join(dir, "a.txt"), "is not a directory; pass the directory that contains it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := fsroot.Open(tt.dir)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestResolve(t *testing.T) {
	dir, secret := tree(t)
	r := open(t, dir)
	tests := []struct {
		in, want string
		outside  bool
	}{
		{"", ".", false},
		{".", ".", false},
		{"./", ".", false},
		{"a.txt", "a.txt", false},
		{"sub/./deep//c.txt", "sub/deep/c.txt", false},
		{"sub/../a.txt", "a.txt", false},
		{"sub/deep/../..", ".", false},
		{filepath.Join(dir, "sub", "b.txt"), "sub/b.txt", false},
		{dir, ".", false},
		{"..", "", true},
		{"../secret.txt", "", true},
		{"sub/../../secret.txt", "", true},
		{secret, "", true},
		{filepath.Dir(dir), "", true},
		{"/", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := r.Resolve(tt.in)
			if tt.outside {
				require.ErrorIs(t, err, fsroot.ErrOutside)
				assert.Contains(t, err.Error(), "pass a path")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestReadFile(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs symlinks")
	}
	dir, _ := tree(t)
	r := open(t, dir)
	tests := []struct {
		name, path string
		max        int64
		want       string
		truncated  bool
		err        error
		msg        string
	}{
		{name: "plain", path: "a.txt", max: 100, want: "hello\n"},
		{name: "absolute inside", path: filepath.Join(dir, "sub/b.txt"), max: 100, want: "bee\n"},
		{name: "truncated", path: "a.txt", max: 3, want: "hel", truncated: true},
		{name: "exact size", path: "a.txt", max: 6, want: "hello\n"},
		{name: "symlink inside", path: "alias.txt", max: 100, want: "hello\n"},
		{name: "symlink up inside", path: "sub/up.txt", max: 100, want: "hello\n"},
		{name: "through dir loop", path: "sub/loop/sub/loop/a.txt", max: 100, want: "hello\n"},
		{name: "symlink to outside file", path: "passwd", max: 100, err: fsroot.ErrOutside},
		{name: "relative symlink outside", path: "relsecret", max: 100, err: fsroot.ErrOutside},
		{name: "through outside dir", path: "outdir/secret.txt", max: 100, err: fsroot.ErrOutside},
		{name: "dotdot", path: "../secret.txt", max: 100, err: fsroot.ErrOutside},
		{name: "directory", path: "sub", max: 100, err: fsroot.ErrNotRegular, msg: "is a directory"},
		{name: "missing", path: "nope.txt", max: 100, err: fs.ErrNotExist, msg: "use ls or glob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, trunc, err := r.ReadFile(tt.path, tt.max)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				assert.NotContains(t, string(data), "secret")
				if tt.msg != "" {
					assert.Contains(t, err.Error(), tt.msg)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(data))
			assert.Equal(t, tt.truncated, trunc)
		})
	}
}

func TestReadFileRefusesFIFOWithoutBlocking(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs")
	}
	dir := t.TempDir()
	mkfifo(t, filepath.Join(dir, "pipe"))
	r := open(t, dir)

	done := make(chan error, 1)
	go func() {
		_, _, err := r.ReadFile("pipe", 100)
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, fsroot.ErrNotRegular)
		assert.Contains(t, err.Error(), "named pipe")
	case <-time.After(5 * time.Second):
		t.Fatal("ReadFile blocked on a FIFO")
	}

	// The Dir path, used by walks, must not block either: it skips the
	// stat before open and relies on O_NONBLOCK.
	d, err := r.OpenDir(".")
	require.NoError(t, err)
	defer d.Close()
	go func() {
		_, _, err := d.ReadFile("pipe", 100, nil)
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, fsroot.ErrNotRegular)
	case <-time.After(5 * time.Second):
		t.Fatal("Dir.ReadFile blocked on a FIFO")
	}
}

func TestReadFileRejectsBadMax(t *testing.T) {
	dir, _ := tree(t)
	r := open(t, dir)
	_, _, err := r.ReadFile("a.txt", 0)
	require.Error(t, err)
}

func TestStatAndReadDir(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs symlinks")
	}
	dir, _ := tree(t)
	r := open(t, dir)

	fi, err := r.Stat("alias.txt")
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular())
	fi, err = r.Lstat("alias.txt")
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&fs.ModeSymlink)
	_, err = r.Stat("passwd")
	require.ErrorIs(t, err, fsroot.ErrOutside)
	target, err := r.Readlink("alias.txt")
	require.NoError(t, err)
	assert.Equal(t, "a.txt", target)

	ents, err := r.ReadDir("")
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"a.txt", "alias.txt", "outdir", "passwd", "relsecret", "sub"}, names)

	_, err = r.ReadDir("../")
	require.ErrorIs(t, err, fsroot.ErrOutside)
	_, err = r.ReadDir("outdir")
	require.ErrorIs(t, err, fsroot.ErrOutside)
}

func TestWalkDirDoesNotFollowSymlinkedDirs(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs symlinks")
	}
	dir, _ := tree(t)
	r := open(t, dir)
	var got []string
	err := r.WalkDir(context.Background(), ".", func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		if d.IsDir() {
			p += "/"
		}
		got = append(got, p)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{
		"./", "a.txt", "alias.txt", "outdir", "passwd", "relsecret",
		"sub/", "sub/b.txt", "sub/deep/", "sub/deep/c.txt", "sub/loop", "sub/up.txt",
	}, got)

	// A sub-walk reports paths relative to the root too.
	got = nil
	require.NoError(t, r.WalkDir(context.Background(), "sub/deep", func(p string, d fs.DirEntry, err error) error {
		got = append(got, p)
		return err
	}))
	assert.Equal(t, []string{"sub/deep", "sub/deep/c.txt"}, got)

	require.ErrorIs(t, r.WalkDir(context.Background(), "..", nil), fsroot.ErrOutside)
}

func TestWalkDirHonoursContext(t *testing.T) {
	dir, _ := tree(t)
	r := open(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err := r.WalkDir(ctx, ".", func(string, fs.DirEntry, error) error {
		n++
		cancel()
		return nil
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, n)
}

func TestDir(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs symlinks")
	}
	dir, _ := tree(t)
	r := open(t, dir)
	top, err := r.OpenDir("")
	require.NoError(t, err)
	defer top.Close()
	assert.Equal(t, ".", top.Path())

	sub, err := top.OpenDir("sub")
	require.NoError(t, err)
	defer sub.Close()
	assert.Equal(t, "sub", sub.Path())

	ents, err := sub.ReadDir()
	require.NoError(t, err)
	assert.Len(t, ents, 4)

	// Symlinked directories are not entered by a walk.
	_, err = sub.OpenDir("loop")
	require.ErrorIs(t, err, fsroot.ErrNotDir)
	_, err = top.OpenDir("outdir")
	require.ErrorIs(t, err, fsroot.ErrNotDir)

	// Names are single entries.
	for _, bad := range []string{"..", ".", "", "deep/c.txt"} {
		_, _, err = sub.ReadFile(bad, 10, nil)
		require.Error(t, err, bad)
	}

	data, trunc, err := sub.ReadFile("b.txt", 10, make([]byte, 0, 2))
	require.NoError(t, err)
	assert.False(t, trunc)
	assert.Equal(t, "bee\n", string(data))

	// A symlink out of the Dir but inside the Root is fine...
	data, _, err = sub.ReadFile("up.txt", 100, nil)
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(data))
	// ...one out of the Root is not.
	_, _, err = top.ReadFile("passwd", 100, nil)
	require.ErrorIs(t, err, fsroot.ErrOutside)
	_, _, err = sub.ReadFile("deep", 100, nil)
	require.ErrorIs(t, err, fsroot.ErrNotRegular)
}

func TestErrorsNameRelativePaths(t *testing.T) {
	dir, _ := tree(t)
	r := open(t, dir)
	_, err := r.Stat("sub/missing")
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "sub/missing:"), err.Error())
	assert.False(t, errors.Is(err, fsroot.ErrOutside))
}
