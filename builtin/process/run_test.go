//go:build linux

package process_test

import (
	"context"
	"errors"
	"fmt"
	"net"
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
	"golang.org/x/sys/unix"

	"github.com/troupe-dev/troupe/builtin/process"
)

// helperEnv makes the test binary a helper command: "dial ADDR" connects
// to ADDR over TCP and exits 0, or 3 when it cannot; "print N" prints N
// numbered lines.
const helperEnv = "PROCESS_TEST_HELPER"

func runHelper(args []string) int {
	if code, ok := escapeHelper(args); ok {
		return code
	}
	switch {
	case len(args) == 2 && args[0] == "dial":
		conn, err := net.DialTimeout("tcp", args[1], 10*time.Second)
		if err != nil {
			fmt.Println(err)
			return 3
		}
		conn.Close()
		return 0
	case len(args) == 2 && args[0] == "print":
		n, _ := strconv.Atoi(args[1])
		for i := 1; i <= n; i++ {
			fmt.Printf("line %d\n", i)
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "helper: unknown mode", args)
	return 2
}

// helper is the command line of the test binary as a helper.
func helper(t *testing.T, args ...string) []string {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	return append([]string{exe}, args...)
}

// sandbox is a directory tree for a command: a workspace and a private
// temporary directory it may write, a home beside them it may not.
type sandbox struct {
	root, work, tmp, home string
}

func newSandbox(t *testing.T) sandbox {
	t.Helper()
	root := t.TempDir()
	s := sandbox{root: root, work: filepath.Join(root, "work"), tmp: filepath.Join(root, "tmp"), home: filepath.Join(root, "home")}
	for _, d := range []string{s.work, s.tmp, s.home} {
		require.NoError(t, os.Mkdir(d, 0o755))
	}
	return s
}

// command is a command of args running in the sandbox's workspace, with
// the environment a caller builds.
func (s sandbox) command(args []string, extra ...string) process.Command {
	return process.Command{
		Args: args,
		Dir:  s.work,
		// The keeper is this test binary: built with -race, it would sleep
		// a second before exiting 0.
		Env:      process.Env(os.Environ(), append([]string{"HOME=" + s.home, "TMPDIR=" + s.tmp, "GORACE=atexit_sleep_ms=0"}, extra...)...),
		Timeout:  time.Minute,
		Writable: []string{s.work, s.tmp},
	}
}

func shell(script string) []string { return []string{"sh", "-c", script} }

func TestRunReportsTheExitStatusAndTheOutputAsWritten(t *testing.T) {
	s := newSandbox(t)
	res, err := process.Run(context.Background(), s.command(shell("echo out; echo err >&2; echo out again; exit 7")))
	require.NoError(t, err)
	assert.Equal(t, 7, res.ExitCode)
	assert.Equal(t, "out\nerr\nout again\n", res.Output)
	assert.False(t, res.TimedOut)
	assert.Positive(t, res.Duration)
}

func TestRunGivesTheCommandNoInput(t *testing.T) {
	s := newSandbox(t)
	res, err := process.Run(context.Background(), s.command([]string{"cat"}))
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode, "cat read the end of /dev/null at once")
	assert.Empty(t, res.Output)
}

func TestRunPassesTheCommandNoDescriptorButItsOutput(t *testing.T) {
	// A descriptor this process holds without close-on-exec, as one
	// inherited from whoever started troupe would be.
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	_, _, errno := syscall.Syscall(syscall.SYS_FCNTL, w.Fd(), syscall.F_SETFD, 0)
	require.Zero(t, errno)
	s := newSandbox(t)
	res, err := process.Run(context.Background(), s.command([]string{"ls", "/proc/self/fd"}))
	require.NoError(t, err)
	// ls's own descriptor on the directory it lists is the fourth.
	assert.Equal(t, []string{"0", "1", "2", "3"}, strings.Fields(res.Output))
}

func TestRunPassesNoKeyAndNoTroupeVariableToTheCommand(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-not-for-commands")
	t.Setenv("OPENAI_API_KEY", "sk-not-for-commands")
	t.Setenv("TROUPE_RUNS_DIR", "/not/for/commands")
	s := newSandbox(t)
	res, err := process.Run(context.Background(), s.command([]string{"env"}))
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, res.Output)
	assert.Contains(t, res.Output, "PATH=")
	assert.Contains(t, res.Output, "HOME="+s.home)
	assert.NotContains(t, res.Output, "not-for-commands")
	assert.NotContains(t, res.Output, "TROUPE_", "neither troupe's variables nor the keeper's reach the command")
}

// landlock reports whether the kernel has Landlock, skipping the test
// when it does not.
func landlock(t *testing.T) {
	t.Helper()
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 || abi < 1 {
		t.Skipf("this kernel has no Landlock (%v): writes cannot be confined here", errno)
	}
}

// landlockOnly gives c the network, so that nothing is hidden from it
// and only Landlock stands between it and the files outside its
// Writable directories.
func landlockOnly(c process.Command) process.Command {
	c.Network = true
	return c
}

func TestRunConfinesWritesToTheWritableDirectories(t *testing.T) {
	landlock(t)
	cases := []struct {
		name, script string
		allowed      bool
		mustNotExist string // relative to the sandbox's root
	}{
		{"a file in $HOME", `echo x > "$HOME/x"`, false, "home/x"},
		{"a file beside the workspace", `echo x > ../outside`, false, "outside"},
		{"a directory beside the workspace", `mkdir ../made`, false, "made"},
		{"a file in the workspace", `echo x > in && mkdir d && echo y > d/f && mv d/f g && rm in && rm -r d`, true, "work/in"},
		{"a file in the private temporary directory", `echo x > "$TMPDIR/t" && rm "$TMPDIR/t"`, true, "tmp/t"},
		{"/dev/null", `echo x > /dev/null`, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSandbox(t)
			res, err := process.Run(context.Background(), landlockOnly(s.command(shell(tc.script))))
			require.NoError(t, err)
			assert.True(t, res.Confined.Writes, "the kernel has Landlock: writes must be confined")
			if tc.allowed {
				assert.Equal(t, 0, res.ExitCode, res.Output)
			} else {
				assert.NotEqual(t, 0, res.ExitCode, res.Output)
				assert.Contains(t, res.Output, "denied")
			}
			if tc.mustNotExist != "" {
				assert.NoFileExists(t, filepath.Join(s.root, tc.mustNotExist))
			}
		})
	}
}

func TestRunConfinedCannotRemoveOrTruncateOutside(t *testing.T) {
	landlock(t)
	s := newSandbox(t)
	kept := filepath.Join(s.home, "kept")
	require.NoError(t, os.WriteFile(kept, []byte("data"), 0o644))
	res, err := process.Run(context.Background(), landlockOnly(s.command(shell(`rm -f "$HOME/kept"; : > "$HOME/kept"; exit 0`))))
	require.NoError(t, err)
	assert.True(t, res.Confined.Writes)
	data, err := os.ReadFile(kept)
	require.NoError(t, err, res.Output)
	assert.Equal(t, "data", string(data))
}

// netns reports whether this process can start a process in a network
// namespace of its own, skipping the test when it cannot.
func netns(t *testing.T) {
	t.Helper()
	attrs := []*syscall.SysProcAttr{{Cloneflags: syscall.CLONE_NEWNET}}
	uid, gid := os.Getuid(), os.Getgid()
	attrs = append(attrs, &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
	})
	var errs []error
	for _, a := range attrs {
		cmd := exec.Command("true")
		cmd.SysProcAttr = a
		err := cmd.Run()
		if err == nil {
			return
		}
		errs = append(errs, err)
	}
	t.Skipf("no network namespace can be made here (%v): the network cannot be taken away", errors.Join(errs...))
}

func TestRunWithoutNetworkCannotConnectEvenToLoopback(t *testing.T) {
	netns(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	s := newSandbox(t)

	cmd := s.command(helper(t, "dial", ln.Addr().String()), helperEnv+"=1")
	res, err := process.Run(context.Background(), cmd)
	require.NoError(t, err)
	assert.True(t, res.Confined.Network, "network namespaces work here: the network must be taken away")
	assert.Equal(t, 3, res.ExitCode, "the dial must fail: %s", res.Output)

	cmd.Network = true
	res, err = process.Run(context.Background(), cmd)
	require.NoError(t, err)
	assert.False(t, res.Confined.Network)
	assert.Equal(t, 0, res.ExitCode, "with the network allowed, the dial works: %s", res.Output)
}

// spawnScript starts a sleep in the command's group and one that leaves
// it with setsid, both holding the command's output, writes their PIDs
// to the file pids, and waits for them.
func spawnScript(pids string) []string {
	return shell(fmt.Sprintf(`sleep 300 & echo $! >> %[1]s; setsid sleep 301 & echo $! >> %[1]s; wait`, pids))
}

func TestRunKillsTheWholeTreeOnTimeout(t *testing.T) {
	s := newSandbox(t)
	pids := filepath.Join(s.tmp, "pids")
	cmd := s.command(spawnScript(pids))
	cmd.Timeout = 3 * time.Second
	res, err := process.Run(context.Background(), cmd)
	require.NoError(t, err)
	assert.True(t, res.TimedOut)
	assert.Equal(t, -1, res.ExitCode)
	// The grandchildren held the output for 300 s: Run did not wait for
	// them.
	assert.Less(t, res.Duration, time.Minute)
	for _, pid := range readPIDs(t, pids, 2) {
		gone(t, pid)
	}
}

func TestRunKillsTheWholeTreeWhenCancelled(t *testing.T) {
	s := newSandbox(t)
	pids := filepath.Join(s.tmp, "pids")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type outcome struct {
		res process.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := process.Run(ctx, s.command(spawnScript(pids)))
		done <- outcome{res, err}
	}()
	kids := readPIDs(t, pids, 2)
	for _, pid := range kids {
		require.True(t, alive(pid))
	}
	cancel()
	out := <-done
	require.ErrorIs(t, out.err, context.Canceled)
	assert.False(t, out.res.TimedOut)
	assert.Equal(t, -1, out.res.ExitCode)
	for _, pid := range kids {
		gone(t, pid)
	}
}

func TestRunLeavesNothingBehindACommandThatExits(t *testing.T) {
	s := newSandbox(t)
	pids := filepath.Join(s.tmp, "pids")
	res, err := process.Run(context.Background(), s.command(shell(fmt.Sprintf(`setsid sleep 300 & echo $! > %s; echo started`, pids))))
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode)
	assert.Equal(t, "started\n", res.Output)
	assert.Less(t, res.Duration, time.Minute, "the left-behind sleep held the output; Run did not wait for it")
	gone(t, readPIDs(t, pids, 1)[0])
}

func TestRunKeepsTheHeadAndTailOfLongOutput(t *testing.T) {
	s := newSandbox(t)
	cmd := s.command(helper(t, "print", "10000"), helperEnv+"=1")
	cmd.MaxOutput = 1000
	res, err := process.Run(context.Background(), cmd)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	var full strings.Builder
	for i := 1; i <= 10000; i++ {
		fmt.Fprintf(&full, "line %d\n", i)
	}
	head, tail := full.String()[:500], full.String()[full.Len()-500:]
	if !strings.HasSuffix(head, "\n") {
		head += "\n" // the marker has a line of its own
	}
	want := fmt.Sprintf("%s[... %d bytes of output cut ...]\n%s", head, full.Len()-1000, tail)
	assert.Equal(t, want, res.Output)
	assert.True(t, strings.HasSuffix(res.Output, "line 9999\nline 10000\n"))
}

func TestRunRefusesACommandItCannotRun(t *testing.T) {
	s := newSandbox(t)
	cases := map[string]struct {
		edit func(*process.Command)
		want error
	}{
		"no program":          {func(c *process.Command) { c.Args = nil }, process.ErrInvalidCommand},
		"a relative dir":      {func(c *process.Command) { c.Dir = "work" }, process.ErrInvalidCommand},
		"a missing dir":       {func(c *process.Command) { c.Dir = filepath.Join(s.root, "missing") }, process.ErrInvalidCommand},
		"a missing writable":  {func(c *process.Command) { c.Writable = append(c.Writable, filepath.Join(s.root, "missing")) }, process.ErrInvalidCommand},
		"a missing visible":   {func(c *process.Command) { c.Visible = []string{filepath.Join(s.root, "missing")} }, process.ErrInvalidCommand},
		"a negative timeout":  {func(c *process.Command) { c.Timeout = -time.Second }, process.ErrInvalidCommand},
		"an unknown program":  {func(c *process.Command) { c.Args = []string{"no-such-program-here"} }, exec.ErrNotFound},
		"a program by a path": {func(c *process.Command) { c.Args = []string{"./missing"} }, exec.ErrNotFound},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cmd := s.command(shell("echo ran > ran"))
			tc.edit(&cmd)
			_, err := process.Run(context.Background(), cmd)
			require.ErrorIs(t, err, tc.want)
			assert.NoFileExists(t, filepath.Join(s.work, "ran"))
		})
	}
}

func TestRunSkipsRelativePathEntries(t *testing.T) {
	s := newSandbox(t)
	require.NoError(t, os.WriteFile(filepath.Join(s.work, "true"), []byte("#!/bin/sh\necho planted\n"), 0o755))
	cmd := s.command([]string{"true"})
	cmd.Env = append(cmd.Env, "PATH=.:"+os.Getenv("PATH"))
	res, err := process.Run(context.Background(), cmd)
	require.NoError(t, err)
	assert.NotContains(t, res.Output, "planted", "a program the workspace holds does not run in place of the one meant")
}

// runHostEnv makes the test binary a host that runs, with Run and no
// network, a spawner writing to the file named, then sleeps until it is
// killed.
const runHostEnv = "TROUPE_PROCESS_TEST_RUN_HOST"

func runRunHost() {
	pids := os.Getenv(runHostEnv)
	_, err := process.Run(context.Background(), process.Command{
		Args:     spawnScript(pids),
		Dir:      filepath.Dir(pids),
		Env:      process.Env(os.Environ()),
		Writable: []string{filepath.Dir(pids)},
	})
	fmt.Fprintln(os.Stderr, "the command ended while its host lived:", err)
	os.Exit(2)
}

// The keeper runs in a network namespace of its own: its parent's death
// still reaches it, and it still kills what left the group.
func TestNothingRunOutlivesAHostKilledWithSIGKILL(t *testing.T) {
	killHostAndCheckItsTree(t, runHostEnv)
}
