package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/tools"
)

// attackTree makes a workspace beside a directory "outside" that holds
// a secret, with every kind of trap in the workspace: symlinks out and
// in, a dangling one, a loop, the .git link of a worktree and a nested
// repository, a named pipe and a socket. It returns the directory
// holding both, and the workspace.
func attackTree(t *testing.T) (string, string) {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	write := func(p, s string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
	}
	write(filepath.Join(outside, "secret.txt"), "secret\n")
	write(filepath.Join(root, "a.txt"), "alpha\n")
	write(filepath.Join(root, "sub", "b.txt"), "alpha bee\n")
	write(filepath.Join(root, ".git"), "gitdir: /elsewhere/.git/worktrees/root\n")
	write(filepath.Join(root, "sub", ".git", "config"), "[core]\n")
	links := map[string]string{
		"passwd":    filepath.Join(outside, "secret.txt"),
		"relsecret": "../outside/secret.txt",
		"outdir":    outside,
		"dangle":    "../outside/created.txt",
		"alias.txt": "a.txt",
		"subalias":  "sub",
		"sub/up":    "../..",
		"loop":      "loop",
		"gitlink":   "sub/.git",
	}
	for name, target := range links {
		require.NoError(t, os.Symlink(target, filepath.Join(root, filepath.FromSlash(name))))
	}
	mkfifo(t, filepath.Join(root, "pipe"))
	l, err := net.Listen("unix", filepath.Join(root, "sock"))
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return base, root
}

func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// pathAttacks are paths write and edit must refuse, with what the refusal
// says.
func pathAttacks(base string) []struct{ path, want string } {
	outside := filepath.Join(base, "outside")
	return []struct{ path, want string }{
		{"../escape.txt", "outside the root"},
		{"new/deeper/../../../escape.txt", "outside the root"},
		{filepath.Join(outside, "new.txt"), "outside the root"},
		{filepath.Join(outside, "secret.txt"), "outside the root"},
		{"/dev/null", "outside the root"},
		{"passwd", "outside the root"},
		{"relsecret", "outside the root"},
		{"outdir/new.txt", "outside the root"},
		{"outdir/secret.txt", "outside the root"},
		{"dangle", "outside the root"},
		{"sub/up/outside/secret.txt", "outside the root"},
		{"alias.txt", "alias.txt is a symlink to a.txt; write and edit do not follow symlinks: give the real path, a.txt"},
		{"subalias/b.txt", "subalias is a symlink to sub; write and edit do not follow symlinks: give the real path, sub/b.txt"},
		{"loop", "loop is a symlink that does not resolve"},
		{"gitlink/config", "gitlink is a symlink to sub/.git, where write and edit do not write"},
		{"pipe", "pipe is a named pipe"},
		{"sock", "sock is a socket"},
		{"a\x00b.txt", "NUL byte"},
		{strings.Repeat("d/", 600) + "f.txt", "the path is 1205 bytes long; give one of at most 1024"},
		{strings.Repeat("n", 300), "is 300 bytes long; a file or directory name may have at most 255"},
		{"newdir/" + strings.Repeat("n", 300), "a file or directory name may have at most 255"},
		{".git", "is inside .git"},
		{".git/config", "is inside .git"},
		{".git/hooks/pre-commit", "is inside .git"},
		{"sub/.git/config", "is inside .git"},
		{".GIT/config", "is inside .GIT"},
		{".git./config", "is inside .git."},
		{".git /config", "is inside .git "},
		{"GIT~1/config", "is inside GIT~1"},
		{".g\u200cit/config", "is inside .g\u200cit"},
		{".", "names the top directory of the workspace"},
		{"sub", "sub is a directory"},
		{"a.txt/x", "a.txt is a regular file, not a directory"},
	}
}

// Every path attack is refused by write and by edit, with a message that
// says why, and nothing on disk changes, inside the workspace or out.
func TestWriteAndEditRefusePathAttacks(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs symlinks, named pipes and Unix file names")
	}
	base, root := attackTree(t)
	ws := &fakeWorkspace{dir: root}
	for _, tool := range []agenttypes.Tool{tools.Write(), tools.Edit()} {
		name := tool.Spec().Name
		for _, tt := range pathAttacks(base) {
			t.Run(name+"/"+fmt.Sprintf("%.40q", tt.path), func(t *testing.T) {
				args := fmt.Sprintf(`{"path":%s,"content":"pwned\n"}`, jsonString(tt.path))
				if name == "edit" {
					args = fmt.Sprintf(`{"path":%s,"old_string":"alpha","new_string":"pwned"}`, jsonString(tt.path))
				}
				before := snapshot(t, base)
				done := make(chan error, 1)
				go func() {
					_, err := callWS(context.Background(), tool, ws, nil, args)
					done <- err
				}()
				select {
				case err := <-done:
					require.Error(t, err)
					assert.Contains(t, err.Error(), tt.want)
					assert.True(t, strings.HasPrefix(err.Error(), name+": "), err.Error())
					assert.NotContains(t, err.Error(), "secret\n")
				case <-time.After(10 * time.Second):
					t.Fatal("the call blocked")
				}
				assert.Equal(t, before, snapshot(t, base), "a refused call changed the disk")
			})
		}
	}
}
