package tools_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/builtin/tools"
)

// gitSecret is the content, and the commit message, of a repository
// outside the root: no call may print it.
const gitSecret = "SECRET-OUTSIDE-CONTENT"

const ownRepoOnly = "git runs only on the root's own repository"

// outsideRepo makes a repository at dir whose one commit, with gitSecret
// as its message, adds secret.txt holding gitSecret, and returns the
// blob's id: an object that exists only there.
func outsideRepo(t *testing.T, dir string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	gitIn(t, dir, "", "init", "-q", "-b", "main")
	writeFile(t, dir, "secret.txt", gitSecret+"\n")
	gitIn(t, dir, "", "add", ".")
	gitIn(t, dir, "", "commit", "-q", "-m", gitSecret)
	return gitIn(t, dir, "", "rev-parse", "HEAD:secret.txt")
}

// requireRefused calls the tool and checks that it refuses with want and
// the reason, and that nothing of the outside repository shows.
func requireRefused(t *testing.T, dir, args, want string) {
	t.Helper()
	out, err := call(t, tools.Git(), dir, `{"args":`+args+`}`)
	require.Error(t, err, "git %s ran and printed: %s", args, out)
	assert.Contains(t, err.Error(), want)
	assert.Contains(t, err.Error(), ownRepoOnly)
	// The refusal comes from the check, before git runs.
	assert.NotContains(t, err.Error(), "failed:")
	assert.NotContains(t, err.Error(), gitSecret)
	assert.NotContains(t, out, gitSecret)
}

// A root whose .git names another repository, one way or another, is
// refused: git would print that repository's files and history.
func TestGitRefusesARepositoryOutsideTheRoot(t *testing.T) {
	tests := []struct {
		name, want string
		setup      func(t *testing.T, root, other string)
	}{
		{".git file with an absolute gitdir", "the root's .git file points at", func(t *testing.T, root, other string) {
			writeFile(t, root, ".git", "gitdir: "+filepath.Join(other, ".git")+"\n")
		}},
		{".git file with a relative gitdir", "the root's .git file points at", func(t *testing.T, root, other string) {
			writeFile(t, root, ".git", "gitdir: ../other/.git\n")
		}},
		{".git symlink", "the root's .git is a symlink to", func(t *testing.T, root, other string) {
			require.NoError(t, os.Symlink(filepath.Join(other, ".git"), filepath.Join(root, ".git")))
		}},
		{"commondir in the root's own .git", "as the common git directory, outside the root", func(t *testing.T, root, other string) {
			gitIn(t, root, "", "init", "-q", "-b", "main")
			writeFile(t, root, ".git/commondir", filepath.Join(other, ".git")+"\n")
		}},
		{"forged linked worktree", "that is not a linked worktree of this root", func(t *testing.T, root, other string) {
			// A real worktree of the other repository, at another place:
			// its gitdir file names that place, not this root.
			gitIn(t, other, "", "worktree", "add", "-q", "-b", "x", filepath.Join(filepath.Dir(other), "x"))
			writeFile(t, root, ".git", "gitdir: "+filepath.Join(other, ".git", "worktrees", "x")+"\n")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			root, other := filepath.Join(base, "root"), filepath.Join(base, "other")
			outsideRepo(t, other)
			require.NoError(t, os.Mkdir(root, 0o755))
			tt.setup(t, root, other)
			for _, args := range []string{`["show","HEAD:secret.txt"]`, `["log"]`, `["status"]`} {
				requireRefused(t, root, args, tt.want)
			}
		})
	}
}

// The root's own repository may not borrow objects from outside it:
// reading a blob that only another repository holds is refused, whichever
// way the object store is reached.
func TestGitRefusesObjectsOutsideTheRoot(t *testing.T) {
	tests := []struct {
		name, want string
		setup      func(t *testing.T, root, other, blob string)
	}{
		{"absolute alternate", ".git/objects/info/alternates lists the object store", func(t *testing.T, root, other, _ string) {
			writeFile(t, root, ".git/objects/info/alternates", filepath.Join(other, ".git", "objects")+"\n")
		}},
		{"relative alternate escaping with ../..", ".git/objects/info/alternates lists the object store", func(t *testing.T, root, other, _ string) {
			rel, err := filepath.Rel(realPath(t, filepath.Join(root, ".git", "objects")), realPath(t, filepath.Join(other, ".git", "objects")))
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(rel, "../.."), rel)
			writeFile(t, root, ".git/objects/info/alternates", "# borrowed\n"+rel+"\n")
		}},
		{"chained alternate, inside the root then outside", "store/objects/info/alternates lists the object store", func(t *testing.T, root, other, _ string) {
			writeFile(t, root, "store/objects/info/alternates", filepath.Join(other, ".git", "objects")+"\n")
			writeFile(t, root, ".git/objects/info/alternates", filepath.Join(root, "store", "objects")+"\n")
		}},
		{"alternate after a quoted entry, as git splits it", ".git/objects/info/alternates lists the object store", func(t *testing.T, root, other, _ string) {
			// git takes "nonexistent", skips the one character after the
			// closing quote, and reads the rest as the next entry.
			writeFile(t, root, ".git/objects/info/alternates", `"nonexistent"X`+filepath.Join(other, ".git", "objects")+"\n")
		}},
		{"alternates file symlinked outside", ".git/objects/info/alternates is a symlink to", func(t *testing.T, root, other, _ string) {
			list := filepath.Join(filepath.Dir(other), "alternates")
			require.NoError(t, os.WriteFile(list, []byte(filepath.Join(other, ".git", "objects")+"\n"), 0o644))
			require.NoError(t, os.Symlink(list, filepath.Join(root, ".git", "objects", "info", "alternates")))
		}},
		{"objects directory symlinked", ".git/objects is a symlink to", func(t *testing.T, root, other, _ string) {
			require.NoError(t, os.RemoveAll(filepath.Join(root, ".git", "objects")))
			require.NoError(t, os.Symlink(filepath.Join(other, ".git", "objects"), filepath.Join(root, ".git", "objects")))
		}},
		{"loose object directory symlinked", "is a symlink to", func(t *testing.T, root, other, blob string) {
			fan := filepath.Join(root, ".git", "objects", blob[:2])
			require.NoError(t, os.RemoveAll(fan))
			require.NoError(t, os.Symlink(filepath.Join(other, ".git", "objects", blob[:2]), fan))
		}},
		{"pack directory symlinked", ".git/objects/pack is a symlink to", func(t *testing.T, root, other, _ string) {
			gitIn(t, other, "", "gc", "-q")
			pack := filepath.Join(root, ".git", "objects", "pack")
			require.NoError(t, os.RemoveAll(pack))
			require.NoError(t, os.Symlink(filepath.Join(other, ".git", "objects", "pack"), pack))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := gitRepo(t)
			other := filepath.Join(t.TempDir(), "other")
			blob := outsideRepo(t, other)
			tt.setup(t, root, other, blob)
			requireRefused(t, root, `["show","`+blob+`"]`, tt.want)
		})
	}
}

// Alternates inside the root are the root's own objects: they are read,
// and a commented-out line naming another repository is no entry.
func TestGitReadsAlternatesInsideTheRoot(t *testing.T) {
	root := gitRepo(t)
	other := filepath.Join(t.TempDir(), "other")
	outsideRepo(t, other)
	store := filepath.Join(root, "store")
	gitIn(t, root, "", "init", "-q", "--bare", store)
	blob := gitIn(t, store, "own stored content\n", "hash-object", "-w", "--stdin")
	writeFile(t, root, ".git/objects/info/alternates",
		"# "+filepath.Join(other, ".git", "objects")+"\n\n../../store/objects\n")
	assert.Equal(t, "own stored content", mustCall(t, tools.Git(), root, `{"args":["show","`+blob+`"]}`))
}

// A .git file naming a directory inside the root is the root's own
// repository.
func TestGitFileInsideTheRoot(t *testing.T) {
	root := gitRepo(t)
	require.NoError(t, os.Rename(filepath.Join(root, ".git"), filepath.Join(root, ".repo")))
	writeFile(t, root, ".git", "gitdir: .repo\n")
	assert.Equal(t, "second\nfirst", mustCall(t, tools.Git(), root, `{"args":["log","--format=%s"]}`))
	assert.Equal(t, " M docs/a.md\n?? .repo/", mustCall(t, tools.Git(), root, `{"args":["status","--short"]}`))
}

// A linked worktree made by `git worktree add` keeps its git directory
// in the main repository, outside the root; it names the root back, so it
// is used, with the main repository's objects and refs.
func TestGitLinkedWorktree(t *testing.T) {
	main := gitRepo(t)
	root := filepath.Join(t.TempDir(), "wt")
	gitIn(t, main, "", "worktree", "add", "-q", "-b", "feature", root)
	writeFile(t, root, "docs/a.md", "# A in the worktree\n")

	assert.Equal(t, "second\nfirst", mustCall(t, tools.Git(), root, `{"args":["log","--format=%s"]}`))
	assert.Equal(t, "package main\n\nfunc main() {}", mustCall(t, tools.Git(), root, `{"args":["show","HEAD~1:main.go"]}`))
	assert.Equal(t, "## feature\n M docs/a.md", mustCall(t, tools.Git(), root, `{"args":["status","-sb"]}`))
	assert.Contains(t, mustCall(t, tools.Git(), root, `{"args":["diff"]}`), "+# A in the worktree")
	assert.Contains(t, mustCall(t, tools.Git(), root, `{"args":["blame","main.go"]}`), "println(1)")

	t.Run("its main repository borrowing objects from outside", func(t *testing.T) {
		other := filepath.Join(t.TempDir(), "other")
		blob := outsideRepo(t, other)
		writeFile(t, main, ".git/objects/info/alternates", filepath.Join(other, ".git", "objects")+"\n")
		requireRefused(t, root, `["show","`+blob+`"]`, "lists the object store")
	})
}

// Named pipes where the check reads a file are refused at once: the call
// returns rather than waits for a writer.
func TestGitRefusesPipesInTheRepository(t *testing.T) {
	tests := []struct{ name, pipe, want string }{
		{".git", ".git", "the root's .git is a named pipe"},
		{"alternates", ".git/objects/info/alternates", "not a regular file"},
		{"commondir", ".git/commondir", "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := gitRepo(t)
			if tt.pipe == ".git" {
				require.NoError(t, os.RemoveAll(filepath.Join(root, ".git")))
			}
			mkfifo(t, filepath.Join(root, filepath.FromSlash(tt.pipe)))
			// A deadline, so that a call stuck on the pipe fails the test
			// instead of hanging it.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, err := callCtx(ctx, tools.Git(), root, `{"args":["log"]}`)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// Nothing of the caller's git environment reaches git: a GIT_DIR,
// GIT_COMMON_DIR, object directory, alternates or index set for the
// process does not make the tool read another repository.
func TestGitIgnoresTheCallersGitEnvironment(t *testing.T) {
	root := gitRepo(t)
	other := filepath.Join(t.TempDir(), "other")
	blob := outsideRepo(t, other)
	objects := filepath.Join(other, ".git", "objects")
	t.Setenv("GIT_DIR", filepath.Join(other, ".git"))
	t.Setenv("GIT_COMMON_DIR", filepath.Join(other, ".git"))
	t.Setenv("GIT_OBJECT_DIRECTORY", objects)
	t.Setenv("GIT_ALTERNATE_OBJECT_DIRECTORIES", objects)
	t.Setenv("GIT_INDEX_FILE", filepath.Join(other, ".git", "index"))

	out, err := call(t, tools.Git(), root, `{"args":["show","`+blob+`"]}`)
	require.Error(t, err, out)
	assert.NotContains(t, err.Error(), gitSecret)
	assert.Equal(t, "second\nfirst", mustCall(t, tools.Git(), root, `{"args":["log","--format=%s"]}`))
	assert.Equal(t, " M docs/a.md", mustCall(t, tools.Git(), root, `{"args":["status","--short"]}`))
}

func realPath(t *testing.T, p string) string {
	t.Helper()
	real, err := filepath.EvalSymlinks(p)
	require.NoError(t, err)
	return real
}
