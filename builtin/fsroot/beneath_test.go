package fsroot_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/builtin/fsroot"
)

// OpenBeneath opens a directory below a top as a Root of its own, which
// works like any Root.
func TestOpenBeneathOpensTheDirectoryBelowTheTop(t *testing.T) {
	dir, _ := tree(t)
	for _, sub := range []string{"sub", "sub/deep", "./sub/../sub"} {
		r, err := fsroot.OpenBeneath(dir, sub)
		require.NoError(t, err, sub)
		data, _, err := r.ReadFile("b.txt", 100)
		if sub == "sub/deep" {
			require.ErrorIs(t, err, fs.ErrNotExist)
		} else {
			require.NoError(t, err, sub)
			assert.Equal(t, "bee\n", string(data))
		}
		assert.Equal(t, filepath.Join(dir, filepath.Clean(filepath.FromSlash(sub))), r.Dir())
		require.NoError(t, r.CheckDir())
		require.NoError(t, r.Close())
	}
	for _, sub := range []string{"", "."} {
		r, err := fsroot.OpenBeneath(dir, sub)
		require.NoError(t, err)
		assert.Equal(t, dir, r.Dir())
		require.NoError(t, r.Close())
	}
}

// A directory below the top that is not there, not a directory, or a
// path that climbs out is refused.
func TestOpenBeneathRefusesWhatIsNotADirectoryInside(t *testing.T) {
	dir, _ := tree(t)
	for sub, want := range map[string]error{
		"nope":      fs.ErrNotExist,
		"a.txt":     fsroot.ErrNotDir,
		"sub/b.txt": fsroot.ErrNotDir,
		"..":        fsroot.ErrOutside,
		"../root":   fsroot.ErrOutside,
		"/etc":      fsroot.ErrOutside,
	} {
		_, err := fsroot.OpenBeneath(dir, sub)
		require.ErrorIs(t, err, want, sub)
	}
}

// The directory below the top replaced by a symlink, to a place outside
// or even inside the top, is refused: a command that may write only
// below the top cannot make a root of anything else. Once a Root is open,
// the same swap leaves it on the directory it holds, and CheckDir says
// the path no longer names it.
func TestOpenBeneathRefusesADirectorySwappedForASymlink(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on Windows")
	}
	top, outside := t.TempDir(), t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(top, "a", "b"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(top, "elsewhere"), 0o755))
	held, err := fsroot.OpenBeneath(top, "a/b")
	require.NoError(t, err)
	defer held.Close()

	require.NoError(t, os.Rename(filepath.Join(top, "a"), filepath.Join(top, "moved")))
	for _, target := range []string{outside, filepath.Join(top, "elsewhere"), "elsewhere"} {
		require.NoError(t, os.RemoveAll(filepath.Join(top, "a")))
		require.NoError(t, os.Symlink(target, filepath.Join(top, "a")))
		_, err := fsroot.OpenBeneath(top, "a/b")
		require.ErrorIs(t, err, fsroot.ErrNotDir, "a -> %s", target)
		assert.Contains(t, err.Error(), "symlink")
	}
	require.NoError(t, os.MkdirAll(filepath.Join(outside, "b"), 0o755))
	require.NoError(t, os.Remove(filepath.Join(top, "a")))
	require.NoError(t, os.Symlink(outside, filepath.Join(top, "a")))

	require.NoError(t, held.ReplaceFile("x.txt", []byte("x\n"), 0o644))
	_, err = os.Lstat(filepath.Join(outside, "b", "x.txt"))
	require.ErrorIs(t, err, fs.ErrNotExist, "the open Root wrote through the swapped path")
	_, err = os.Lstat(filepath.Join(top, "moved", "b", "x.txt"))
	require.NoError(t, err, "the open Root writes in the directory it holds")
	require.ErrorIs(t, held.CheckDir(), fsroot.ErrOutside)
}
