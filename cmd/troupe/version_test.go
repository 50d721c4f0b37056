package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVersionLine(t *testing.T) {
	tests := []struct {
		name string
		b    buildStamp
		want string
	}{
		{"a checkout", buildStamp{version: "v0.0.0-20261126005818-dc4874d55e05", commit: "dc4874d55e05111213056fddde5244878be2a609", time: "2026-11-26T00:58:18Z", goVer: "go1.26.8"},
			"troupe v0.0.0-20261126005818-dc4874d55e05 (commit dc4874d55e05, 2026-11-26T00:58:18Z, go1.26.8)"},
		{"a checkout with changes", buildStamp{version: "v0.0.0-20261126005818-dc4874d55e05+dirty", commit: "dc4874d55e05111213056fddde5244878be2a609", time: "2026-11-26T00:58:18Z", modified: true, goVer: "go1.26.8"},
			"troupe v0.0.0-20261126005818-dc4874d55e05+dirty (commit dc4874d55e05+dirty, 2026-11-26T00:58:18Z, go1.26.8)"},
		{"go install module@version", buildStamp{version: "v1.2.3", goVer: "go1.26.8"}, "troupe v1.2.3 (go1.26.8)"},
		{"nothing recorded", buildStamp{goVer: "go1.26.8"}, "troupe devel (go1.26.8)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, versionLine(tt.b))
		})
	}
}

func TestVersion(t *testing.T) {
	o := troupe(t, "version")
	require.Equal(t, exitOK, o.code, o.stderr)
	assert.True(t, strings.HasPrefix(o.stdout, "troupe "), o.stdout)
	assert.Contains(t, o.stdout, runtime.Version())
}

// TestVersionOfABuildFromACheckout builds troupe as a user would, with
// go build in a git checkout (a copy of this tree, committed), and finds
// the commit in troupe version, then a dirty marker once a file changed.
func TestVersionOfABuildFromACheckout(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	checkout := t.TempDir()
	copyTree(t, filepath.Join("..", ".."), checkout)
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = checkout
		cmd.Env = gitEnv()
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "the tree as it is")
	commit := git("rev-parse", "--short=12", "HEAD")

	bin := filepath.Join(t.TempDir(), "troupe")
	version := func() string {
		t.Helper()
		build := exec.Command("go", "build", "-o", bin, "./cmd/troupe")
		build.Dir = checkout
		// As go build does by default, whatever the environment's GOFLAGS.
		build.Env = append(gitEnv(), "GOFLAGS=-buildvcs=auto")
		out, err := build.CombinedOutput()
		require.NoError(t, err, "%s", out)
		v := exec.Command(bin, "version")
		v.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
		out, err = v.Output()
		require.NoError(t, err)
		return string(out)
	}
	out := version()
	assert.Regexp(t, `^troupe v\S+ \(commit `+commit+`, \d{4}-\d\d-\d\dT[^,]+, `+runtime.Version()+`\)\n$`, out)
	assert.NotContains(t, out, "dirty")

	require.NoError(t, os.WriteFile(filepath.Join(checkout, "README.md"), []byte("changed\n"), 0o644))
	assert.Contains(t, version(), "commit "+commit+"+dirty, ")
}

// gitEnv is the environment for git in a test's own repository: no user
// or system configuration (hooks, signing), a fixed author.
func gitEnv() []string {
	return append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
}

// copyTree copies the files of the repository at root that git tracks or
// would track, as they are in the working tree, into dst.
func copyTree(t *testing.T, root, dst string) {
	t.Helper()
	cmd := exec.Command("git", "-c", "core.fsmonitor=false", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err)
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, rel)
		fi, err := os.Lstat(src)
		if os.IsNotExist(err) {
			continue // deleted in the working tree
		}
		require.NoError(t, err)
		if !fi.Mode().IsRegular() {
			continue
		}
		target := filepath.Join(dst, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o755))
		in, err := os.Open(src)
		require.NoError(t, err)
		f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_EXCL, fi.Mode().Perm())
		require.NoError(t, err)
		_, err = io.Copy(f, in)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		require.NoError(t, in.Close())
	}
}
