//go:build unix

package fsroot_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/builtin/fsroot"
)

// Dir.ReadDir gives the entries and kinds the system's own listing gives,
// without following links.
func TestDirReadDirMatchesTheSystemsListing(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "file.go"), []byte("package a\n"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))
	require.NoError(t, os.Symlink("file.go", filepath.Join(dir, "link")))
	require.NoError(t, os.Symlink("sub", filepath.Join(dir, "dirlink")))
	require.NoError(t, os.Symlink("/nowhere", filepath.Join(dir, "dangling")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	for i := range 300 { // more than one read of the directory
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("many-%03d-with-a-longer-name.txt", i)), nil, 0o600))
	}
	want, err := os.ReadDir(dir)
	require.NoError(t, err)

	r, err := fsroot.Open(dir)
	require.NoError(t, err)
	defer r.Close()
	d, err := r.OpenDir("")
	require.NoError(t, err)
	defer d.Close()
	got, err := d.ReadDir()
	require.NoError(t, err)
	slices.SortFunc(got, func(a, b fs.DirEntry) int { return compare(a.Name(), b.Name()) })
	require.Len(t, got, len(want))
	for i := range want {
		assert.Equal(t, want[i].Name(), got[i].Name())
		assert.Equal(t, want[i].Type(), got[i].Type(), want[i].Name())
		assert.Equal(t, want[i].IsDir(), got[i].IsDir(), want[i].Name())
		wi, err := want[i].Info()
		require.NoError(t, err)
		gi, err := got[i].Info()
		require.NoError(t, err)
		assert.Equal(t, wi.Mode(), gi.Mode(), want[i].Name())
		assert.Equal(t, wi.Size(), gi.Size(), want[i].Name())
	}
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// BenchmarkReadDir lists a directory of 2,000 files through the resolver
// and through os.Root's own ReadDir, side by side.
func BenchmarkReadDir(b *testing.B) {
	dir := b.TempDir()
	for i := range 2000 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d.go", i)), nil, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("fsroot.Dir", func(b *testing.B) {
		r, _ := fsroot.Open(dir)
		defer r.Close()
		d, _ := r.OpenDir("")
		defer d.Close()
		for range b.N {
			if ents, err := d.ReadDir(); err != nil || len(ents) != 2000 {
				b.Fatal(err, len(ents))
			}
		}
	})
	b.Run("os.Root", func(b *testing.B) {
		root, _ := os.OpenRoot(dir)
		defer root.Close()
		for range b.N {
			f, _ := root.Open(".")
			ents, err := f.ReadDir(-1)
			f.Close()
			if err != nil || len(ents) != 2000 {
				b.Fatal(err, len(ents))
			}
		}
	})
}
