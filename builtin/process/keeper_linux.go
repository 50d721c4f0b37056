package process

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Variables a keeper is started with; they do not reach the command it
// keeps, nor does any other variable of the prefix.
const (
	envKeeperPrefix = "TROUPE_KEEPER_"
	// envKeeper holds the process ID of the keeper's parent.
	envKeeper = "TROUPE_KEEPER_PARENT"
	// envKeeperFiles is how many descriptors after standard error the
	// keeper passes on to the command.
	envKeeperFiles = "TROUPE_KEEPER_FILES"
	// envKeeperConfine asks the keeper to confine the command (Run): a
	// JSON confineRequest.
	envKeeperConfine = "TROUPE_KEEPER_CONFINE"
	// envKeeperStdin asks the keeper to pass its standard input on to
	// the command.
	envKeeperStdin = "TROUPE_KEEPER_STDIN"
	// envKeeperRace says the keeper was given this program's GORACE,
	// which cmd's environment lacks: the keeper takes it off again.
	envKeeperRace = "TROUPE_KEEPER_RACE"
	// envKeeperRemove names a directory the keeper removes once the tree
	// it keeps has ended (KeeperRemoves).
	envKeeperRemove = "TROUPE_KEEPER_REMOVE"
)

// KeeperRemoves has the keeper of kept, a command Kept returned, remove
// dir once the tree it keeps has ended: a directory this program made for
// the command (its sockets, say), which this program would remove after
// it too, but cannot once killed. dir must be absolute. A command Kept
// did not give a keeper (a program without ServeIfKeeper) is left as it
// is: nothing outlives this program to remove dir.
func KeeperRemoves(kept *exec.Cmd, dir string) {
	if filepath.IsAbs(dir) && slices.ContainsFunc(kept.Env, func(kv string) bool { return strings.HasPrefix(kv, envKeeper+"=") }) {
		kept.Env = append(kept.Env, envKeeperRemove+"="+dir)
	}
}

// Kept returns a command that runs cmd under a keeper: this program,
// re-executed, which starts cmd, adopts every process cmd's tree leaves
// behind (PR_SET_CHILD_SUBREAPER), and kills them all when cmd exits,
// when the keeper is signalled, or when this program dies, even by
// SIGKILL (the keeper's parent-death signal is one it can catch). The
// keeper leads a session and a process group of its own, which cmd's
// tree shares unless a process leaves it: KillGroup on the returned
// command's process ends it all, and nothing in the tree has this
// program's controlling terminal. cmd's standard input is cmd.Stdin
// when it was set before Kept (a pipe a server is spoken to over), and
// /dev/null otherwise; its environment is cmd.Env, or this process's
// when that is nil, as for any exec.Cmd.
//
// Without ServeIfKeeper in the program, Kept returns cmd contained as
// Contain does: its group dies with KillGroup, its own children live on
// if this program is killed.
func Kept(cmd *exec.Cmd) *exec.Cmd {
	if !keepers.Load() {
		Contain(cmd)
		return cmd
	}
	return keeperOf(cmd, nil, nil)
}

// keeperOf returns the keeper of cmd. With a confinement request, the
// keeper confines cmd as it asks and reports on status, which it gets
// as the descriptor after cmd's own.
func keeperOf(cmd *exec.Cmd, confine []byte, status *os.File) *exec.Cmd {
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	env = append(env[:len(env):len(env)],
		envKeeper+"="+strconv.Itoa(os.Getpid()),
		envKeeperFiles+"="+strconv.Itoa(len(cmd.ExtraFiles)))
	files := cmd.ExtraFiles
	if cmd.Stdin != nil {
		env = append(env, envKeeperStdin+"=1")
	}
	if race, ok := os.LookupEnv("GORACE"); ok && !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "GORACE=") }) {
		// The keeper is this program: a race-built one keeps its race
		// detector's settings (a test's "no sleep at exit", say).
		env = append(env, "GORACE="+race, envKeeperRace+"=1")
	}
	if confine != nil {
		env = append(env, envKeeperConfine+"="+string(confine))
		files = append(files[:len(files):len(files)], status)
	}
	k := &exec.Cmd{
		// This very program, even if its file was replaced since it
		// started.
		Path:       "/proc/self/exe",
		Args:       append([]string{"troupe-keeper", cmd.Path}, cmd.Args...),
		Env:        env,
		Dir:        cmd.Dir,
		Stdin:      cmd.Stdin,
		ExtraFiles: files,
		Stdout:     cmd.Stdout,
		Stderr:     cmd.Stderr,
		WaitDelay:  cmd.WaitDelay,
		// A session of its own, so that nothing it runs has this
		// process's controlling terminal to read, or to push keystrokes
		// into (TIOCSTI) for the user's shell to run; it leads the
		// session's process group, whose ID is its PID, as KillGroup
		// needs. SIGTERM, which it handles, when this process dies.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGTERM},
	}
	if k.WaitDelay == 0 {
		// A process that left the tree's group may hold the keeper's
		// output open: Wait must not wait for it.
		k.WaitDelay = 2 * time.Second
	}
	return k
}

// serveKeeper runs the keeper when this process was started as one, and
// reports false otherwise.
func serveKeeper() bool {
	parent, ok := os.LookupEnv(envKeeper)
	if !ok {
		return false
	}
	os.Exit(keep(parent))
	return true
}

// keep starts the command in os.Args[1:] (its path, then its argv) and
// keeps it.
func keep(parent string) int {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGCHLD)
	_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0, 0, 0)
	if strconv.Itoa(os.Getppid()) != parent {
		return 125 // the parent died before the signal was armed
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "troupe keeper: %v\n", err)
		return 125
	}
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "troupe keeper: no command to keep")
		return 125
	}
	n, _ := strconv.Atoi(os.Getenv(envKeeperFiles))
	files := make([]*os.File, 0, n)
	for i := range n {
		files = append(files, os.NewFile(uintptr(3+i), "inherited"))
	}
	req, err := readConfineRequest(3 + n)
	if err != nil {
		fmt.Fprintf(os.Stderr, "troupe keeper: %v\n", err)
		return 125
	}
	cmd := &exec.Cmd{
		Path: os.Args[1], Args: os.Args[2:], Env: keptEnv(os.Environ()),
		Stdout: os.Stdout, Stderr: os.Stderr, ExtraFiles: files,
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	}
	if os.Getenv(envKeeperStdin) != "" {
		cmd.Stdin = os.Stdin
	}
	if code := startConfined(cmd, req); code != 0 {
		return code
	}
	for _, f := range files {
		f.Close()
	}
	status := supervise(cmd, sigs)
	killTree()
	if dir := os.Getenv(envKeeperRemove); filepath.IsAbs(dir) {
		_ = os.RemoveAll(dir)
	}
	return status
}

// keptEnv is the keeper's environment without the keeper's own
// variables.
func keptEnv(environ []string) []string {
	_, race := os.LookupEnv(envKeeperRace)
	env := make([]string, 0, len(environ))
	for _, kv := range environ {
		if !strings.HasPrefix(kv, envKeeperPrefix) && !(race && strings.HasPrefix(kv, "GORACE=")) {
			env = append(env, kv)
		}
	}
	return env
}

// supervise waits for cmd, reaping what the keeper adopts meanwhile, and
// kills cmd when the keeper is told to stop or its parent dies. It
// returns cmd's exit status, 128 and the signal's number when a signal
// ended it.
func supervise(cmd *exec.Cmd, sigs <-chan os.Signal) int {
	target := cmd.Process.Pid
	done := make(chan int, 1)
	go func() { done <- exitStatus(cmd.Wait()) }()
	for {
		select {
		case status := <-done:
			return status
		case sig := <-sigs:
			if sig == syscall.SIGCHLD {
				reapAdopted(target)
				continue
			}
			// Told to stop, or troupe has died: nothing below may live on.
			_ = cmd.Process.Kill()
			return <-done
		}
	}
}

// exitStatus is the status a shell would give for Wait's error.
func exitStatus(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode()
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
	}
	return 1
}

// reapAdopted reaps the exited processes the keeper adopted, leaving the
// command itself to its Wait.
func reapAdopted(target int) {
	self := os.Getpid()
	for _, p := range processes() {
		if p.ppid == self && p.pid != target && p.state == 'Z' {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil)
		}
	}
}

// killTree kills every process in the keeper's group and every process it
// adopted, and reaps them, until none is left: killing one may orphan its
// children, which then come to the keeper. It gives up after a few
// seconds of processes that will not die.
func killTree() {
	self := os.Getpid()
	group := syscall.Getpgrp()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		left := false
		for _, p := range processes() {
			if p.pid == self || (p.ppid != self && p.pgrp != group) {
				continue
			}
			left = true
			if p.state != 'Z' {
				_ = syscall.Kill(p.pid, syscall.SIGKILL)
			}
			if p.ppid == self {
				var ws syscall.WaitStatus
				_, _ = syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil)
			}
		}
		if !left {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type procStat struct {
	pid, ppid, pgrp int
	state           byte
}

// processes reads every process's parent, group and state from /proc.
func processes() []procStat {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make([]procStat, 0, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readStat(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// readStat parses /proc/PID/stat: "pid (comm) state ppid pgrp ...", where
// comm may hold spaces and parentheses, so the fields are read after the
// last ')'.
func readStat(pid int) (procStat, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, false
	}
	sc := bufio.NewScanner(bytes.NewReader(data[i+1:]))
	sc.Split(bufio.ScanWords)
	var fields []string
	for len(fields) < 3 && sc.Scan() {
		fields = append(fields, sc.Text())
	}
	if len(fields) < 3 || len(fields[0]) != 1 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(fields[1])
	pgrp, err2 := strconv.Atoi(fields[2])
	if err1 != nil || err2 != nil {
		return procStat{}, false
	}
	return procStat{pid: pid, ppid: ppid, pgrp: pgrp, state: fields[0][0]}, true
}
