package gitsafe_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/builtin/gitsafe"
)

// setupGit runs the real git in dir with a clean configuration, for
// setting up test repositories.
func setupGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com",
		"GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

// The commands that write (commit, worktree add, checkout, merge, gc's
// triggers) run none of the hooks, filters, signing programs or
// fsmonitor that the repository configures, and commit as troupe.
func TestWritingCommandsRunNothingTheRepositoryNames(t *testing.T) {
	dir := t.TempDir()
	markers := t.TempDir()
	pwn := func(name string) string { return "touch '" + filepath.Join(markers, name) + "'" }
	script := func(name string) string {
		p := filepath.Join(t.TempDir(), name)
		require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+pwn(name)+"\ncat\n"), 0o755))
		return p
	}
	setupGit(t, dir, "init", "-q", "-b", "main")
	write(t, dir, "a.txt", "a\n")
	write(t, dir, ".gitattributes", "* filter=evil merge=evil\n")
	setupGit(t, dir, "add", ".")
	setupGit(t, dir, "commit", "-q", "-m", "first")
	hooks := t.TempDir()
	for _, h := range []string{"pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-checkout",
		"post-merge", "reference-transaction", "post-index-change", "pre-auto-gc", "post-rewrite"} {
		require.NoError(t, os.WriteFile(filepath.Join(hooks, h), []byte("#!/bin/sh\n"+pwn("hook-"+h)+"\n"), 0o755))
	}
	for key, value := range map[string]string{
		"core.hooksPath": hooks, "filter.evil.clean": pwn("clean") + "; cat", "filter.evil.smudge": pwn("smudge") + "; cat",
		"filter.evil.process": pwn("process"), "merge.evil.driver": pwn("merge-driver"),
		"core.fsmonitor": script("fsmonitor"), "commit.gpgSign": "true", "tag.gpgSign": "true",
		"gpg.program": script("gpg"), "gc.auto": "1", "core.pager": pwn("pager"), "core.editor": pwn("editor"),
	} {
		setupGit(t, dir, "config", key, value)
	}

	ctx := context.Background()
	g, err := gitsafe.New(ctx, dir, gitsafe.Options{})
	require.NoError(t, err)
	run := func(args ...string) string {
		t.Helper()
		out, err := g.Output(ctx, args...)
		require.NoError(t, err)
		return strings.TrimSpace(string(out))
	}
	write(t, dir, "a.txt", "a changed\n")
	write(t, dir, "b.txt", "b\n")
	run("add", "-A")
	run("commit", "-q", "-m", "second")
	run("tag", "-a", "-m", "v1", "v1")
	run("checkout", "-q", "-b", "side", "HEAD~1")
	write(t, dir, "c.txt", "c\n")
	run("add", "c.txt")
	run("commit", "-q", "-m", "side")
	run("checkout", "-q", "main")
	run("merge", "-q", "--no-edit", "side")
	run("worktree", "add", "-q", "-b", "wt", filepath.Join(t.TempDir(), "wt"), "HEAD")
	run("status")
	assert.Equal(t, "troupe <troupe@localhost>", run("log", "-1", "--format=%an <%ae>"))
	assert.Equal(t, "troupe <troupe@localhost>", run("log", "-1", "--format=%cn <%ce>"))

	ran, err := os.ReadDir(markers)
	require.NoError(t, err)
	for _, m := range ran {
		t.Errorf("git ran a program the repository configures: marker %s exists", m.Name())
	}
}

// A repository borrowing objects from outside is refused before git
// runs, with an error that says why.
func TestNewRefusesAlternatesOutside(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	setupGit(t, dir, "init", "-q")
	setupGit(t, other, "init", "-q")
	write(t, dir, ".git/objects/info/alternates", filepath.Join(other, ".git", "objects")+"\n")
	_, err := gitsafe.New(context.Background(), dir, gitsafe.Options{})
	require.ErrorIs(t, err, gitsafe.ErrOutsideRoot)
	assert.Contains(t, err.Error(), "lists the object store")

	// The same store is the caller's to allow.
	_, err = gitsafe.New(context.Background(), dir, gitsafe.Options{Within: []string{other}})
	require.NoError(t, err)
}

// A git directory the caller names is used even when the work tree's
// .git names another one.
func TestNewUsesTheGitDirGiven(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	private := filepath.Join(t.TempDir(), "private.git")
	setupGit(t, other, "init", "-q")
	setupGit(t, dir, "init", "-q", "--bare", private)
	write(t, dir, ".git", "gitdir: "+filepath.Join(other, ".git")+"\n")
	g, err := gitsafe.New(context.Background(), dir, gitsafe.Options{GitDir: private})
	require.NoError(t, err)
	out, err := g.Output(context.Background(), "rev-parse", "--git-dir")
	require.NoError(t, err)
	real, err := filepath.EvalSymlinks(private)
	require.NoError(t, err)
	assert.Equal(t, real, strings.TrimSpace(string(out)))
	assert.Equal(t, real, g.CommonDir())
}
