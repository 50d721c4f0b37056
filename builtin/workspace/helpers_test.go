package workspace_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/workspace"
)

// gitIn runs the real git in dir with a clean configuration, for setting
// up and inspecting test repositories, and returns its trimmed output.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitErr(dir, args...)
	require.NoError(t, err, out)
	return out
}

func gitErr(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com",
		"GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func write(t testing.TB, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	require.NoError(t, err)
	return string(data)
}

func missing(t *testing.T, dir, name string) {
	t.Helper()
	_, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(name)))
	assert.ErrorIs(t, err, fs.ErrNotExist, "%s should not exist in %s", name, dir)
}

// lines is a file of ten numbered lines, for edits in different places.
const lines = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"

// newRepo makes a repository with one commit: f.txt (lines), keep.txt,
// gone.txt, sub/s.txt and a .gitignore that ignores .env, node_modules/
// and build/.
func newRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("these tests need git on PATH")
	}
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q", "-b", "main")
	write(t, dir, "f.txt", lines)
	write(t, dir, "keep.txt", "keep\n")
	write(t, dir, "gone.txt", "gone\n")
	write(t, dir, "sub/s.txt", "s\n")
	write(t, dir, ".gitignore", ".env\nnode_modules/\nbuild/\n")
	gitIn(t, dir, "add", ".")
	gitIn(t, dir, "commit", "-q", "-m", "first")
	return dir
}

func newProvider(t *testing.T) *workspace.Provider {
	t.Helper()
	return newProviderAt(t, t.TempDir())
}

func newProviderAt(t *testing.T, state string) *workspace.Provider {
	t.Helper()
	p, err := workspace.New(workspace.Config{
		StateDir: state,
		// Hermetic: no user's excludes file.
		ExcludesFile: filepath.Join(state, "no-excludes"),
	})
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

func open(t *testing.T, p *workspace.Provider, dir, agent string, parent agenttypes.Workspace) *workspace.Workspace {
	t.Helper()
	ws, err := p.Open(context.Background(), agenttypes.WorkspaceRequest{Run: "run-1", Agent: agent, Dir: dir, Parent: parent})
	require.NoError(t, err)
	return ws.(*workspace.Workspace)
}

func closeWS(t *testing.T, w agenttypes.Workspace) *agenttypes.Changes {
	t.Helper()
	ch, err := w.Close(context.Background())
	require.NoError(t, err)
	return ch
}

// userState is everything of a user's repository a workspace must not
// change: every file of the work tree, the index, HEAD, the refs other
// than troupe's, and the git directory's files other than objects,
// logs of troupe's branches and worktree administration.
func userState(t *testing.T, dir string) map[string]string {
	t.Helper()
	state := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch rel {
			case ".git/objects", ".git/worktrees", ".git/refs/heads/troupe", ".git/logs/refs/heads/troupe":
				return filepath.SkipDir
			}
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		state[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	require.NoError(t, err)
	state["refs"] = filterLines(gitIn(t, dir, "for-each-ref", "--format=%(refname) %(objectname)"), "refs/heads/troupe/")
	return state
}

func filterLines(s, drop string) string {
	var keep []string
	for l := range strings.SplitSeq(s, "\n") {
		if !strings.Contains(l, drop) {
			keep = append(keep, l)
		}
	}
	sort.Strings(keep)
	return strings.Join(keep, "\n")
}

// treeFiles lists a directory's files (not .git), slash paths, sorted.
func treeFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	require.NoError(t, err)
	sort.Strings(files)
	return files
}

// worktrees lists the worktrees git knows of the repository at dir.
func worktrees(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for l := range strings.SplitSeq(gitIn(t, dir, "worktree", "list", "--porcelain"), "\n") {
		if p, ok := strings.CutPrefix(l, "worktree "); ok {
			out = append(out, p)
		}
	}
	return out
}

// branches lists troupe's branches of the repository at dir.
func branches(t *testing.T, dir string) []string {
	t.Helper()
	out := gitIn(t, dir, "for-each-ref", "--format=%(refname:short)", "refs/heads/troupe/")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

func fileAt(t *testing.T, dir, rev, path string) string {
	t.Helper()
	return gitIn(t, dir, "show", rev+":"+path)
}

// noMarkers fails for each marker file a program left in dir.
func noMarkers(t *testing.T, dir string) {
	t.Helper()
	ran, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, m := range ran {
		t.Errorf("git ran a program the repository configures: marker %s exists", m.Name())
	}
}

func equalBytes(t *testing.T, want, got map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s changed", k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s appeared", k)
		}
	}
}
