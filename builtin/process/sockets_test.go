//go:build linux

package process_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/troupe-dev/troupe/builtin/process"
)

// hidable skips the test unless the host's sockets can be hidden here:
// Landlock, and a process started in a network and a mount namespace of
// its own (in a user namespace too when this is not root) that can mount
// a file system over a directory.
func hidable(t *testing.T) {
	t.Helper()
	landlock(t)
	uid, gid := os.Getuid(), os.Getgid()
	attrs := []*syscall.SysProcAttr{{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN},
	}}
	if os.Geteuid() == 0 {
		attrs = append(attrs, &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWNS})
	}
	var outs []string
	for _, a := range attrs {
		args := helper(t, "hide", t.TempDir())
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = append(os.Environ(), helperEnv+"=1", "GORACE=atexit_sleep_ms=0")
		cmd.SysProcAttr = a
		out, err := cmd.CombinedOutput()
		if err == nil {
			return
		}
		outs = append(outs, fmt.Sprintf("%v: %s", err, out))
	}
	t.Skipf("no process here gets a mount namespace it can change (%s): the host's sockets cannot be hidden", strings.Join(outs, "; "))
}

// listenUnix listens on a Unix socket at path for the test's length.
func listenUnix(t *testing.T, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
}

// The sockets of the host are where a command without network would
// escape through: the session bus starts any program unconfined
// (systemd-run --user), an ssh-agent signs, the Docker socket is root.
func TestRunWithoutNetworkReachesNoSocketOfTheHost(t *testing.T) {
	hidable(t)
	runtimeDir := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", runtimeDir)
	s := newSandbox(t)
	socks := map[string]string{"the session bus in $XDG_RUNTIME_DIR": filepath.Join(runtimeDir, "bus")}
	if within(s.root, "/tmp") {
		socks["an agent's socket in /tmp, beside the workspace"] = filepath.Join(s.home, "agent.sock")
	}
	for name, sock := range socks {
		t.Run(name, func(t *testing.T) {
			listenUnix(t, sock)
			for _, path := range []string{sock, fmt.Sprintf("/proc/%d/root%s", os.Getpid(), sock)} {
				cmd := s.command(helper(t, "dialunix", path), helperEnv+"=1")
				res, err := process.Run(context.Background(), cmd)
				require.NoError(t, err)
				assert.True(t, res.Confined.Network, "the host's sockets can be hidden here: they must be")
				assert.Equal(t, 3, res.ExitCode, "the command reached %s: %s", path, res.Output)
			}

			cmd := s.command(helper(t, "dialunix", sock), helperEnv+"=1")
			cmd.Network = true
			res, err := process.Run(context.Background(), cmd)
			require.NoError(t, err)
			assert.False(t, res.Confined.Network)
			assert.Equal(t, 0, res.ExitCode, "with the network allowed, the socket is there: %s", res.Output)
		})
	}
}

// within reports whether path is dir or lies beneath it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

func TestRunWithoutNetworkStillSeesItsDirectoriesAndItsProgram(t *testing.T) {
	hidable(t)
	s := newSandbox(t)
	// Everything of the sandbox's lies where sockets are hidden.
	t.Setenv("XDG_RUNTIME_DIR", s.root)
	listenUnix(t, filepath.Join(s.home, "agent.sock"))
	gitDir := filepath.Join(s.root, "git")
	require.NoError(t, os.Mkdir(gitDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(gitDir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644))
	bin := filepath.Join(s.root, "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	listenUnix(t, filepath.Join(bin, "agent.sock"))
	tool := filepath.Join(bin, "tool")
	require.NoError(t, os.WriteFile(tool, []byte(`#!/bin/sh
set -e
[ "$(pwd)" = "`+s.work+`" ]
echo w > w
echo t > "$TMPDIR/t"
cat w "$TMPDIR/t" `+gitDir+`/HEAD
echo bin: $(ls "$(dirname "$0")")
echo root: $(ls ..)
`), 0o755))

	cmd := s.command([]string{tool})
	cmd.Visible = []string{gitDir}
	res, err := process.Run(context.Background(), cmd)
	require.NoError(t, err)
	require.True(t, res.Confined.Network)
	assert.Equal(t, 0, res.ExitCode, res.Output)
	assert.Equal(t, "w\nt\nref: refs/heads/main\nbin: tool\nroot: bin git tmp work\n", res.Output,
		"the workspace, the temporary directory, the program and the visible directory stay; the rest is hidden")
	assert.FileExists(t, filepath.Join(s.work, "w"))
	assert.FileExists(t, filepath.Join(s.tmp, "t"))
}

// A Writable directory is never hidden: when the host's sockets lie
// beneath one, the command reaches them, and the result says it had the
// network.
func TestRunWithoutNetworkSaysSoOnlyWhenTheSocketsAreHidden(t *testing.T) {
	hidable(t)
	s := newSandbox(t)
	runtimeDir := filepath.Join(s.work, "run")
	require.NoError(t, os.Mkdir(runtimeDir, 0o700))
	t.Setenv("XDG_RUNTIME_DIR", runtimeDir)
	sock := filepath.Join(runtimeDir, "bus")
	listenUnix(t, sock)
	res, err := process.Run(context.Background(), s.command(helper(t, "dialunix", sock), helperEnv+"=1"))
	require.NoError(t, err)
	assert.False(t, res.Confined.Network, "the socket was in reach")
	assert.Equal(t, 0, res.ExitCode, res.Output)
}
