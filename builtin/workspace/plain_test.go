package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/workspace"
)

// A directory that is not a git repository is snapshotted into a
// private repository under the state directory: the directory gains no
// .git, its .gitignore is honoured, and changes come back as usual.
func TestPlainDirectory(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	write(t, dir, "a.txt", "a\n")
	write(t, dir, "lib/b.txt", "b\n")
	write(t, dir, ".gitignore", "secret.txt\ncache/\n")
	write(t, dir, "secret.txt", "s\n")
	write(t, dir, "cache/c", "c\n")
	p := newProviderAt(t, state)
	w := open(t, p, dir, "a", nil)
	assert.Equal(t, []string{".gitignore", "a.txt", "lib/b.txt"}, treeFiles(t, w.Dir()))
	missing(t, dir, ".git")

	write(t, w.Dir(), "lib/b.txt", "b changed\n")
	write(t, w.Dir(), "new.txt", "n\n")
	ch := closeWS(t, w)
	assert.Equal(t, []string{"new.txt"}, ch.Added)
	assert.Equal(t, []string{"lib/b.txt"}, ch.Modified)
	assert.Equal(t, filepath.Join(realPath(t, state), "snapshots"), filepath.Dir(ch.Repo))
	missing(t, dir, ".git")
	assert.Equal(t, "b\n", read(t, dir, "lib/b.txt"), "the user's directory is untouched")

	// The patch applies to the directory as it was.
	check := t.TempDir()
	require.NoError(t, os.CopyFS(check, os.DirFS(dir)))
	gitIn(t, check, "apply", "--check", ch.Patch)
}

// A directory with more files than the cap allows is refused, with an
// error that names the cap and what to do, and nothing is left behind.
func TestPlainDirectoryOverTheCap(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	for _, name := range []string{"1", "2", "3", "4", "5"} {
		write(t, dir, name+".txt", name)
	}
	write(t, dir, ".gitignore", "ignored/\n")
	for i := range 10 {
		write(t, dir, filepath.Join("ignored", string(rune('a'+i))), "x")
	}
	tests := []struct {
		name string
		cfg  workspace.Config
		want string
	}{
		{"files", workspace.Config{MaxSnapshotFiles: 4}, "capped at 4 files"},
		{"bytes", workspace.Config{MaxSnapshotBytes: 3}, "at least"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.StateDir, cfg.ExcludesFile = state, filepath.Join(state, "none")
			p, err := workspace.New(cfg)
			require.NoError(t, err)
			defer p.Close()
			_, err = p.Open(context.Background(), agenttypes.WorkspaceRequest{Run: "r", Agent: "a", Dir: dir})
			require.ErrorIs(t, err, workspace.ErrTooLarge)
			require.ErrorIs(t, err, agenttypes.ErrWorkspace)
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), "make it a git repository")
			assert.NotContains(t, err.Error(), "Config.", "it reaches the command line, which has no Go fields to set")
			assertNothingLeft(t, state)
			missing(t, dir, ".git")
		})
	}

	// Within the caps, ignored files do not count.
	p, err := workspace.New(workspace.Config{StateDir: state, MaxSnapshotFiles: 6})
	require.NoError(t, err)
	defer p.Close()
	ws, err := p.Open(context.Background(), agenttypes.WorkspaceRequest{Run: "r", Agent: "a", Dir: dir})
	require.NoError(t, err)
	closeWS(t, ws)
}
