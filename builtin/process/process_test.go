//go:build linux

package process_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/builtin/process"
)

func TestEnvPassesTheAllowListAndWhatIsNamed(t *testing.T) {
	environ := []string{
		"PATH=/usr/bin", "HOME=/home/u", "LC_CTYPE=C.UTF-8", "LANG=C",
		"OPENAI_API_KEY=sk-secret", "ANTHROPIC_API_KEY=sk-ant", "AWS_SECRET_ACCESS_KEY=x", "GITHUB_TOKEN=ghp",
		"TOOL_TOKEN=old",
	}
	env := process.Env(environ, "TOOL_TOKEN=new", "TROUPE_X=1")
	assert.ElementsMatch(t, []string{"PATH=/usr/bin", "HOME=/home/u", "LC_CTYPE=C.UTF-8", "LANG=C", "TOOL_TOKEN=new", "TROUPE_X=1"}, env)
	for _, kv := range env {
		assert.NotContains(t, kv, "sk-", "no key passes unless named")
	}
}

// script writes an executable shell script that prints what.
func script(t *testing.T, path, what string) []byte {
	t.Helper()
	body := []byte("#!/bin/sh\necho " + what + "\n")
	require.NoError(t, os.WriteFile(path, body, 0o755))
	return body
}

func TestAnImageRunsTheBytesItHashedWhateverReplacesTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tool")
	body := script(t, path, "checked")
	im, err := process.Open(path)
	require.NoError(t, err)
	defer im.Close()
	want := sha256.Sum256(body)
	assert.Equal(t, hex.EncodeToString(want[:]), im.SHA256)

	// Another binary renamed into place, as an attacker racing the check
	// would do.
	other := filepath.Join(dir, "other")
	script(t, other, "swapped")
	require.NoError(t, os.Rename(other, path))

	out, err := im.Command().Output()
	require.NoError(t, err)
	assert.Equal(t, "checked\n", string(out))
}

func TestOpenRefusesWhatIsNotAnExecutableFile(t *testing.T) {
	dir := t.TempDir()
	_, err := process.Open(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not an executable file")
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	_, err = process.Open(fifo)
	require.Error(t, err, "a named pipe is refused without blocking")
}

// alive reports whether pid names a process that is not a zombie.
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(data), ')')
	return i >= 0 && !strings.HasPrefix(strings.TrimSpace(string(data[i+1:])), "Z")
}

// gone waits until pid is gone; the bound only keeps a broken test from
// hanging.
func gone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d outlived what should have ended it", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readPIDs waits for the file at path to hold n process IDs, one a line.
func readPIDs(t *testing.T, path string, n int) []int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, _ := os.ReadFile(path)
		lines := strings.Fields(string(data))
		if len(lines) >= n {
			var pids []int
			for _, l := range lines[:n] {
				pid, err := strconv.Atoi(l)
				require.NoError(t, err)
				pids = append(pids, pid)
				// A failing test leaves nothing behind either.
				t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
			}
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %d process IDs (%q)", path, n, data)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// spawner is a shell command that starts a sleep in its own group
// (child), one that leaves the group with setsid (escaped), writes both
// PIDs to pids, and waits.
func spawner(pids string) *exec.Cmd {
	sh := fmt.Sprintf(`sleep 300 & echo $! >> %[1]s; setsid sleep 301 & echo $! >> %[1]s; wait`, pids)
	return exec.Command("/bin/sh", "-c", sh)
}

func TestKillGroupEndsTheProcessAndWhatItStarted(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	cmd := exec.Command("/bin/sh", "-c", fmt.Sprintf(`sleep 300 & echo $! > %s; wait`, pids))
	process.Contain(cmd)
	require.NoError(t, cmd.Start())
	child := readPIDs(t, pids, 1)[0]
	require.True(t, alive(child))
	require.NoError(t, process.KillGroup(cmd.Process.Pid))
	_ = cmd.Wait()
	gone(t, child)
	assert.NoError(t, process.KillGroup(cmd.Process.Pid), "a group already gone is not an error")
}

func TestAKeptCommandsTreeEndsWithIt(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	cmd := process.Kept(spawner(pids))
	require.NoError(t, cmd.Start())
	kids := readPIDs(t, pids, 2)
	for _, pid := range kids {
		require.True(t, alive(pid))
	}
	// The shell is stopped as a host stops a plugin: the keeper is told.
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, ignoreExit(cmd.Wait()))
	for _, pid := range kids {
		gone(t, pid)
	}
}

func ignoreExit(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return nil
	}
	return err
}

// hostEnv makes the test binary a host: it starts a kept spawner writing
// to the file named, then sleeps until it is killed. With hostRemovesEnv,
// its keeper is to remove the directory named.
const (
	hostEnv        = "TROUPE_PROCESS_TEST_HOST"
	hostRemovesEnv = "TROUPE_PROCESS_TEST_HOST_REMOVES"
)

func runHost() {
	cmd := process.Kept(spawner(os.Getenv(hostEnv)))
	if dir := os.Getenv(hostRemovesEnv); dir != "" {
		process.KeeperRemoves(cmd, dir)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	time.Sleep(time.Hour)
}

// What a plugin starts must not outlive troupe, even when troupe is killed
// with SIGKILL and can do nothing about it: the keeper sees its parent die
// and kills the tree, including a process that left the group.
func TestNothingOutlivesAHostKilledWithSIGKILL(t *testing.T) {
	killHostAndCheckItsTree(t, hostEnv)
}

// killHostAndCheckItsTree starts this test binary as the host that
// hostVar asks for, which starts two processes and writes their IDs,
// kills the host with SIGKILL, and checks that both die with it.
func killHostAndCheckItsTree(t *testing.T, hostVar string) {
	t.Helper()
	pids := filepath.Join(t.TempDir(), "pids")
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), hostVar+"="+pids)
	require.NoError(t, host.Start())
	kids := readPIDs(t, pids, 2)
	for _, pid := range kids {
		require.True(t, alive(pid))
	}
	require.NoError(t, host.Process.Signal(syscall.SIGKILL))
	_ = host.Wait()
	for _, pid := range kids {
		gone(t, pid)
	}
}

// A keeper removes the directory it was given once the tree it keeps has
// ended: when its command exits, and when its host is killed with
// SIGKILL, which leaves the host no chance to remove it itself. A
// relative directory is not taken.
func TestAKeeperRemovesTheDirectoryItWasGiven(t *testing.T) {
	scratch := func() string {
		dir := filepath.Join(t.TempDir(), "sockets")
		require.NoError(t, os.Mkdir(dir, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), nil, 0o600))
		return dir
	}
	dir := scratch()
	cmd := process.Kept(exec.Command("/bin/true"))
	process.KeeperRemoves(cmd, dir)
	process.KeeperRemoves(cmd, "relative")
	assert.NotContains(t, cmd.Env, "TROUPE_KEEPER_REMOVE=relative")
	require.NoError(t, cmd.Run())
	assert.NoDirExists(t, dir, "once its command exited")

	dir = scratch()
	pids := filepath.Join(t.TempDir(), "pids")
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), hostEnv+"="+pids, hostRemovesEnv+"="+dir)
	require.NoError(t, host.Start())
	kids := readPIDs(t, pids, 2)
	assert.DirExists(t, dir, "while the tree runs")
	require.NoError(t, host.Process.Signal(syscall.SIGKILL))
	_ = host.Wait()
	for _, pid := range kids {
		gone(t, pid)
	}
	assert.Eventually(t, func() bool {
		_, err := os.Stat(dir)
		return errors.Is(err, os.ErrNotExist)
	}, 10*time.Second, 10*time.Millisecond, "once its host was killed")
}

// A server is spoken to over its standard input: a kept command reads
// what it was given before Kept, and /dev/null otherwise.
func TestAKeptCommandReadsTheStandardInputItWasGiven(t *testing.T) {
	var out bytes.Buffer
	cmd := exec.Command("/bin/cat")
	cmd.Stdin, cmd.Stdout = strings.NewReader("over the pipe"), &out
	require.NoError(t, process.Kept(cmd).Run())
	assert.Equal(t, "over the pipe", out.String())

	out.Reset()
	cmd = exec.Command("/bin/cat")
	cmd.Stdout = &out
	require.NoError(t, process.Kept(cmd).Run())
	assert.Empty(t, out.String())
}

// The keeper is this program, and runs with its race detector's settings
// (TestMain sets GORACE); the command it keeps gets only its own
// environment, GORACE included or not.
func TestAKeptCommandGetsItsOwnEnvironmentNotTheKeepersGORACE(t *testing.T) {
	require.NotEmpty(t, os.Getenv("GORACE"), "TestMain sets GORACE")
	for _, tt := range []struct {
		env  []string
		want string
	}{
		{[]string{"PATH=" + os.Getenv("PATH")}, "[]"},
		{[]string{"PATH=" + os.Getenv("PATH"), "GORACE=atexit_sleep_ms=0 halt_on_error=1"}, "[atexit_sleep_ms=0 halt_on_error=1]"},
	} {
		var out bytes.Buffer
		cmd := exec.Command("/bin/sh", "-c", `echo "[${GORACE-}]"`)
		cmd.Env, cmd.Stdout = tt.env, &out
		require.NoError(t, process.Kept(cmd).Run())
		assert.Equal(t, tt.want, strings.TrimSpace(out.String()), "env %v", tt.env)
	}
}
