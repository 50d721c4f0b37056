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

func TestReplaceFile(t *testing.T) {
	dir, secret := tree(t)
	r := open(t, dir)

	require.NoError(t, r.ReplaceFile("sub/new.txt", []byte("new\n"), 0o644))
	got, err := os.ReadFile(filepath.Join(dir, "sub", "new.txt"))
	require.NoError(t, err)
	assert.Equal(t, "new\n", string(got))

	require.NoError(t, os.Chmod(filepath.Join(dir, "a.txt"), 0o600))
	require.NoError(t, r.ReplaceFile("a.txt", []byte("replaced\n"), 0o755))
	fi, err := os.Stat(filepath.Join(dir, "a.txt"))
	require.NoError(t, err)
	if runtime.GOOS != "windows" {
		assert.Equal(t, fs.FileMode(0o755), fi.Mode().Perm(), "the mode given, not the umask's")
	}

	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		assert.NotContains(t, e.Name(), ".tmp-", "no temporary file is left behind")
	}

	for _, p := range []string{"../x.txt", secret, "."} {
		assert.Error(t, r.ReplaceFile(p, []byte("x"), 0o644), p)
	}
	assert.ErrorIs(t, r.ReplaceFile("missing/x.txt", []byte("x"), 0o644), fs.ErrNotExist)
}

// The file is replaced, never written in place: a hard link to the old
// file, wherever it is, keeps the old content.
func TestReplaceFileLeavesHardLinksAlone(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs hard links")
	}
	dir, _ := tree(t)
	outside := filepath.Join(filepath.Dir(dir), "linked.txt")
	require.NoError(t, os.Link(filepath.Join(dir, "a.txt"), outside))
	r := open(t, dir)
	require.NoError(t, r.ReplaceFile("a.txt", []byte("changed\n"), 0o644))
	got, err := os.ReadFile(outside)
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(got))
}

// A symlink in the file's place is replaced by the file, not followed.
func TestReplaceFileReplacesASymlink(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs symlinks")
	}
	dir, secret := tree(t)
	r := open(t, dir)
	require.NoError(t, r.ReplaceFile("passwd", []byte("mine\n"), 0o644))
	got, err := os.ReadFile(secret)
	require.NoError(t, err)
	assert.Equal(t, "root:x:0:0:secret\n", string(got))
	fi, err := os.Lstat(filepath.Join(dir, "passwd"))
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular())
}

func TestMkdirAndRemove(t *testing.T) {
	dir, _ := tree(t)
	r := open(t, dir)
	require.NoError(t, r.Mkdir("sub/made", 0o755))
	fi, err := os.Stat(filepath.Join(dir, "sub", "made"))
	require.NoError(t, err)
	assert.True(t, fi.IsDir())
	assert.ErrorIs(t, r.Mkdir("sub/made", 0o755), fs.ErrExist)
	require.NoError(t, r.Remove("sub/made"))
	_, err = os.Stat(filepath.Join(dir, "sub", "made"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.ErrorIs(t, r.Mkdir("../made", 0o755), fsroot.ErrOutside)
	if runtime.GOOS != "windows" {
		assert.ErrorIs(t, r.Mkdir("outdir/made", 0o755), fsroot.ErrOutside)
		assert.ErrorIs(t, r.Remove("outdir/secret.txt"), fsroot.ErrOutside)
	}
}
