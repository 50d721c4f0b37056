package tools

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/builtin/fsroot"
)

// When the file cannot be written after its directories were made, the
// directories go again: a failed write leaves nothing behind.
func TestPutRemovesTheDirectoriesItMade(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("relies on the length limit of a Unix file name")
	}
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "kept"), 0o755))
	root, err := fsroot.Open(dir)
	require.NoError(t, err)
	defer root.Close()
	// Past the checks resolveTarget makes: a name the file system
	// refuses only when the file is put in place.
	long := strings.Repeat("n", 300)
	tgt := &target{rel: "kept/d1/d2/" + long, newDirs: []string{"kept/d1", "kept/d1/d2"}}
	require.Error(t, put(root, tgt, []byte("x")))
	ents, err := os.ReadDir(filepath.Join(dir, "kept"))
	require.NoError(t, err)
	assert.Empty(t, ents, "the directories made for the file are removed, and no temporary file is left")
}

func TestIsGitName(t *testing.T) {
	for name, want := range map[string]bool{
		".git": true, ".GIT": true, ".Git": true, ".git.": true, ".git ": true, ".git. .": true,
		"git~1": true, "GIT~1": true, ".g\u200cit": true, "\ufeff.git": true,
		"git": false, ".gitignore": false, ".github": false, "x.git": false, ".git2": false, "..git": false,
	} {
		assert.Equal(t, want, isGitName(name), "%q", name)
	}
}

// equalSpace is normalSpace's comparison without the allocation.
func FuzzEqualSpace(f *testing.F) {
	for _, s := range [][2]string{{"\tif x  {", "if x {"}, {"a b", "ab"}, {"  ", ""}, {"a\u00a0b", "a b"}, {"x ", "x"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, line, other string) {
		if !equalSpace(line, normalSpace(line)) {
			t.Fatalf("%q is not equal to its own normal form %q", line, normalSpace(line))
		}
		if got, want := equalSpace(line, normalSpace(other)), normalSpace(line) == normalSpace(other); got != want {
			t.Fatalf("equalSpace(%q, normal %q) = %v, want %v", line, normalSpace(other), got, want)
		}
	})
}
