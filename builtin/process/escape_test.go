//go:build linux

package process_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/troupe-dev/troupe/builtin/process"
)

// escapeHelper runs the helper modes that try to get out of a
// confinement: "dialunix PATH" connects to the Unix socket PATH and
// exits 0, or 3 when it cannot; "tiocsti PATH TEXT" opens the terminal
// PATH and pushes TEXT into its input as if typed, exiting 0, or 3 when
// it cannot; "hide DIR" makes the mounts private and mounts an empty
// file system over DIR, exiting 0, or 3 when it cannot.
func escapeHelper(args []string) (int, bool) {
	switch {
	case len(args) == 2 && args[0] == "dialunix":
		conn, err := net.Dial("unix", args[1])
		if err != nil {
			fmt.Println(err)
			return 3, true
		}
		conn.Close()
		return 0, true
	case len(args) == 3 && args[0] == "tiocsti":
		if err := pushInput(args[1], args[2]); err != nil {
			fmt.Println(err)
			return 3, true
		}
		return 0, true
	case len(args) == 2 && args[0] == "hide":
		if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			fmt.Println(err)
			return 3, true
		}
		if err := unix.Mount("tmpfs", args[1], "tmpfs", 0, ""); err != nil {
			fmt.Println(err)
			return 3, true
		}
		return 0, true
	}
	return 0, false
}

// pushInput opens the terminal path for reading only (what TIOCSTI
// needs) and pushes text into its input.
func pushInput(path, text string) error {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOCTTY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	for i := range len(text) {
		b := text[i]
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.TIOCSTI, uintptr(unsafe.Pointer(&b))); errno != 0 {
			return fmt.Errorf("TIOCSTI on %s: %w", path, errno)
		}
	}
	return nil
}

// ttyHostEnv makes the test binary a host whose controlling terminal is
// its standard input. It checks that it can push input into its
// terminal itself (exiting 4 when it cannot), then has Run run commands
// in the directory named that try to, and prints how each ended and how
// many bytes wait in the terminal's input afterwards.
const ttyHostEnv = "TROUPE_PROCESS_TEST_TTY_HOST"

func runTTYHost() {
	tty, err := os.Readlink("/proc/self/fd/0")
	if err == nil {
		err = pushInput("/dev/tty", "x")
	}
	if err == nil {
		err = unix.IoctlSetInt(0, unix.TCFLSH, unix.TCIFLUSH)
	}
	if err != nil {
		fmt.Println(err)
		os.Exit(4)
	}
	dir := os.Getenv(ttyHostEnv)
	exe, _ := os.Executable()
	for _, path := range []string{"/dev/tty", tty} {
		res, err := process.Run(context.Background(), process.Command{
			Args: []string{exe, "tiocsti", path, "echo pwned\n"}, Dir: dir,
			Env:      process.Env(os.Environ(), helperEnv+"=1", "GORACE=atexit_sleep_ms=0"),
			Writable: []string{dir},
		})
		fmt.Printf("%s: exit %d, %v: %s\n", path, res.ExitCode, err, strings.TrimSpace(res.Output))
	}
	waiting, err := unix.IoctlGetInt(0, unix.TIOCINQ)
	fmt.Printf("waiting: %d %v\n", waiting, err)
	os.Exit(0)
}

// A command that pushes keystrokes into troupe's terminal has the user's
// shell run them once troupe exits.
func TestRunCannotTypeIntoTroupesTerminal(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	var out bytes.Buffer
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), ttyHostEnv+"="+t.TempDir(), "GORACE=atexit_sleep_ms=0")
	host.Stdin, host.Stdout, host.Stderr = tty, &out, &out
	host.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	err = host.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 4 {
		t.Skipf("this kernel lets no process push input into its terminal: %s", out.String())
	}
	require.NoError(t, err, out.String())
	t.Log(out.String())
	assert.Contains(t, out.String(), "waiting: 0 <nil>", "a command pushed input into the terminal")
	n, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCINQ)
	require.NoError(t, err)
	assert.Zero(t, n, "a command pushed input into the terminal")
}

func TestRunCannotMakeADeviceNode(t *testing.T) {
	landlock(t)
	if os.Geteuid() != 0 {
		t.Skip("only root may make device nodes at all")
	}
	s := newSandbox(t)
	for _, kind := range []string{"c", "b"} {
		// /dev/null's numbers, and the first loop device's.
		numbers := map[string]string{"c": "1 3", "b": "7 0"}[kind]
		res, err := process.Run(context.Background(), s.command(shell("mknod dev-"+kind+" "+kind+" "+numbers)))
		require.NoError(t, err)
		assert.NotEqual(t, 0, res.ExitCode, "mknod %s: %s", kind, res.Output)
		assert.NoFileExists(t, filepath.Join(s.work, "dev-"+kind))
	}
}

// A keeper leads a session of its own, so that what it runs has no
// controlling terminal, and a process group of its own, which KillGroup
// ends.
func TestAKeeperLeadsASessionAndAGroupOfItsOwn(t *testing.T) {
	pids := filepath.Join(t.TempDir(), "pids")
	cmd := process.Kept(exec.Command("/bin/sh", "-c", fmt.Sprintf(`sleep 300 & echo $! > %s; wait`, pids)))
	require.NoError(t, cmd.Start())
	child := readPIDs(t, pids, 1)[0]
	pid := cmd.Process.Pid
	sid, err := unix.Getsid(pid)
	require.NoError(t, err)
	pgid, err := unix.Getpgid(pid)
	require.NoError(t, err)
	assert.Equal(t, pid, sid, "the keeper leads a session")
	assert.Equal(t, pid, pgid, "the keeper leads a group")
	childGroup, err := unix.Getpgid(child)
	require.NoError(t, err)
	assert.Equal(t, pid, childGroup, "its command is in its group")
	require.NoError(t, process.KillGroup(pid))
	require.NoError(t, ignoreExit(cmd.Wait()))
	gone(t, child)
}
