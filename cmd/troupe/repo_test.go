package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// troupeIn runs the built command as its own process in dir, with env.
func troupeIn(t *testing.T, dir string, env []string, args ...string) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, troupeBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(env, "PWD="+dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "troupe %s did not end: %s", strings.Join(args, " "), stderr.String())
	if err != nil {
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit)
	}
	return outcome{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
}

// gitProject is a real repository with a file at its root and an empty
// subdirectory.
func gitProject(t *testing.T) (root, sub string) {
	t.Helper()
	root = t.TempDir()
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real // the directory the command sees as its current one
	}
	gitIn(t, root, "init", "-q")
	require.NoError(t, os.WriteFile(filepath.Join(root, "needle.go"), []byte("package needle\n\n// rootOnlyNeedle is only at the root.\nfunc rootOnlyNeedle() {}\n"), 0o644))
	sub = filepath.Join(root, "docs", "notes")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(sub, "todo.txt"), []byte("nothing to find here\n"), 0o644))
	return root, sub
}

// From a subdirectory, with no --repo, the project's root is searched,
// and the command says so; --repo . searches the subdirectory alone.
func TestRepoDefaultIsTheProjectRootAboveTheCurrentDirectory(t *testing.T) {
	env := servedEnv(t)
	root, sub := gitProject(t)
	const where = "(the root of the project holding the current directory)"

	o := troupeIn(t, sub, env, "tools", "call", "grep", `{"pattern":"rootOnlyNeedle"}`)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, "needle.go:4:")
	assert.Equal(t, "working in "+root+" "+where+"\n", o.stderr)

	o = troupeIn(t, sub, env, "run", "explore", "--progress", "plain", "where is rootOnlyNeedle?")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, "needle.go")
	lines := strings.Split(o.stderr, "\n")
	require.Greater(t, len(lines), 2, o.stderr)
	assert.True(t, strings.HasPrefix(lines[0], "using model "), o.stderr)
	assert.Equal(t, "working in "+root+" "+where, lines[1], "said second, after the model")

	o = troupeIn(t, sub, env, "run", "explore", "--progress", "none", "--json", "where is rootOnlyNeedle?")
	require.Equal(t, 0, o.code, o.stderr)
	assert.NotContains(t, o.stderr, "working in", "--progress none says nothing on stderr")

	o = troupeIn(t, sub, env, "mcp", "serve") // its stdin ends at once
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stderr, "troupe: working in "+root+" "+where+"\n")

	o = troupeIn(t, root, env, "tools", "call", "grep", `{"pattern":"rootOnlyNeedle"}`)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Equal(t, "working in "+root+" (the current directory)\n", o.stderr)

	o = troupeIn(t, sub, env, "tools", "call", "grep", `{"pattern":"rootOnlyNeedle"}`, "--repo", ".")
	require.Equal(t, 0, o.code, o.stderr)
	assert.NotContains(t, o.stdout, "needle.go", "an explicit --repo is searched as given")
	assert.Equal(t, "working in "+sub+" (--repo)\n", o.stderr)
}

// tree lists every path below dir, to tell whether a command wrote any.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var paths []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		paths = append(paths, p)
		return err
	}))
	return paths
}

// Without --repo, troupe will not work in the home directory, nor in a
// project rooted there: every command that takes --repo refuses, exits 2,
// says to pass --repo and writes nothing. --repo asks for it on purpose.
func TestRepoDefaultRefusesTheHomeDirectory(t *testing.T) {
	env := servedEnv(t)
	home := os.Getenv("HOME") // the test's own, a temporary directory
	if real, err := filepath.EvalSymlinks(home); err == nil {
		home = real
	}
	runs := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "TROUPE_RUNS_DIR="); ok {
			runs = v
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(home, "diary.txt"), []byte("homeOnlyNeedle\n"), 0o600))
	commands := [][]string{
		{"run", "explore", "where is homeOnlyNeedle?"},
		{"tools", "call", "grep", `{"pattern":"homeOnlyNeedle"}`},
		{"mcp", "serve"},
		{"trust"},
		{"plugins", "lock"},
	}
	before := tree(t, home)
	for _, c := range commands {
		o := troupeIn(t, home, env, c...)
		assert.Equal(t, exitUsage, o.code, "%v: %s", c, o.stderr)
		assert.Empty(t, o.stdout, "%v", c)
		assert.Contains(t, o.stderr, "the current directory "+home+" is your home directory", "%v", c)
		assert.Contains(t, o.stderr, "pass --repo DIR", "%v", c)
		assert.Contains(t, o.stderr, "--repo "+home+" to work in all of it on purpose", "%v", c)
	}
	assert.Equal(t, before, tree(t, home), "a refused command writes nothing")
	assert.NoDirExists(t, runs)

	// Those that only read definitions search nothing: they show the
	// user's types and plugins from home.
	for _, c := range [][]string{{"tools", "list"}, {"types", "list"}, {"types", "show", "explore"}, {"plugins", "list"}} {
		o := troupeIn(t, home, env, c...)
		assert.Equal(t, 0, o.code, "%v: %s", c, o.stderr)
		assert.NotContains(t, o.stderr, "your home directory", "%v", c)
	}
	assert.Equal(t, before, tree(t, home), "listing writes nothing")

	// A home directory that is a repository (of dotfiles, say) holds every
	// directory below it without one of its own.
	gitIn(t, home, "init", "-q")
	notes := filepath.Join(home, "notes")
	require.NoError(t, os.Mkdir(notes, 0o700))
	o := troupeIn(t, notes, env, "tools", "call", "grep", `{"pattern":"homeOnlyNeedle"}`)
	assert.Equal(t, exitUsage, o.code, o.stderr)
	assert.Contains(t, o.stderr, "the project holding the current directory is "+home+", your home directory")
	assert.Contains(t, o.stderr, "pass --repo . to work in the current directory")

	o = troupeIn(t, notes, env, "tools", "call", "grep", `{"pattern":"homeOnlyNeedle"}`, "--repo", ".")
	require.Equal(t, 0, o.code, o.stderr)
	assert.NotContains(t, o.stdout, "diary.txt")

	o = troupeIn(t, notes, env, "tools", "call", "grep", `{"pattern":"homeOnlyNeedle"}`, "--repo", home)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, "diary.txt:1:")
	assert.Equal(t, "working in "+home+" (--repo)\n", o.stderr)
}

// Without --repo, troupe will not search the whole filesystem; --repo /
// may ask for it.
func TestRepoDefaultRefusesTheFilesystemRoot(t *testing.T) {
	env := servedEnv(t)
	for _, marker := range []string{".git", ".troupe"} {
		if _, err := os.Lstat(filepath.Join("/", marker)); err == nil {
			t.Skipf("/%s makes / a project on this machine", marker)
		}
	}
	o := troupeIn(t, "/", env, "tools", "call", "ls", "{}")
	assert.Equal(t, exitUsage, o.code, o.stderr)
	assert.Empty(t, o.stdout)
	assert.Contains(t, o.stderr, "the current directory / is the filesystem root")
	assert.Contains(t, o.stderr, "pass --repo DIR")

	o = troupeIn(t, "/", env, "tools", "call", "ls", "{}", "--repo", "/")
	require.Equal(t, 0, o.code, o.stderr)
	assert.NotEmpty(t, o.stdout)
	assert.Equal(t, "working in / (--repo)\n", o.stderr)

	// A symbolic link to / is as wide as / itself.
	link := filepath.Join(t.TempDir(), "everything")
	require.NoError(t, os.Symlink("/", link))
	o = troupeIn(t, link, env, "tools", "call", "ls", "{}")
	assert.Equal(t, exitUsage, o.code, o.stderr)
	assert.Empty(t, o.stdout)
	assert.Contains(t, o.stderr, "is the filesystem root")
}

// With HOME unset, the home directory is still the account's, and still
// refused as a default.
func TestRepoDefaultRefusesTheAccountsHomeWithoutHOME(t *testing.T) {
	u, err := user.Current()
	if err != nil || u.HomeDir == "" || u.HomeDir == "/" {
		t.Skip("no home directory for this account")
	}
	if fi, err := os.Stat(u.HomeDir); err != nil || !fi.IsDir() {
		t.Skipf("the account's home %s is not a directory here", u.HomeDir)
	}
	for _, marker := range []string{".git", ".troupe"} {
		if _, err := os.Lstat(filepath.Join(u.HomeDir, marker)); err == nil {
			t.Skipf("%s makes the home directory a project", marker)
		}
	}
	var env []string
	for _, kv := range servedEnv(t) {
		if !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	o := troupeIn(t, u.HomeDir, env, "tools", "call", "ls", "{}")
	assert.Equal(t, exitUsage, o.code, o.stderr)
	assert.Empty(t, o.stdout)
	assert.Contains(t, o.stderr, "is your home directory")
}
