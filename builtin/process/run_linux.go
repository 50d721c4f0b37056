package process

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
)

// started is a command Run started: under a keeper, here.
type started struct {
	// cmd is the keeper.
	cmd *exec.Cmd
	// status is where the keeper says how it confined the command.
	status   *os.File
	confined Confinement
}

// start starts c's keeper, which confines the command as c asks, in a
// network namespace of its own when c takes the network away and the
// kernel allows one.
func start(c *Command, path string, out io.Writer) (*started, error) {
	if !keepers.Load() {
		return nil, fmt.Errorf("%w: call process.ServeIfKeeper first in main (and in TestMain)", ErrNoKeeper)
	}
	request, err := json.Marshal(confineRequest{Writable: c.Writable})
	if err != nil {
		return nil, err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer statusW.Close() // the keeper has its own once started
	for _, ns := range namespaces(c.Network) {
		cmd := &exec.Cmd{Path: path, Args: c.Args, Dir: c.Dir, Env: c.Env, Stdout: out, Stderr: out}
		k := keeperOf(cmd, request, statusW)
		ns.apply(k.SysProcAttr)
		err = k.Start()
		if err == nil {
			return &started{cmd: k, status: statusR, confined: Confinement{Network: ns.flags != 0}}, nil
		}
		if ns.flags == 0 || !refused(err) {
			break
		}
		slog.Debug("process: a network namespace was refused; trying the next way", "flags", ns.flags, "err", err)
	}
	statusR.Close()
	return nil, err
}

// namespace is a way to start a keeper: the namespaces it gets.
type namespace struct {
	flags uintptr
	// user maps this process's user and group into a user namespace of
	// the keeper's own, which lets a user who is not root make the
	// network namespace.
	user bool
}

// namespaces are the ways to try, in order, to start a keeper: with no
// network when network is false, then, when the kernel refuses that,
// with the network.
func namespaces(network bool) []namespace {
	if network {
		return []namespace{{}}
	}
	withUser := namespace{flags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET, user: true}
	if os.Geteuid() == 0 {
		return []namespace{{flags: syscall.CLONE_NEWNET}, withUser, {}}
	}
	return []namespace{withUser, {}}
}

func (ns namespace) apply(a *syscall.SysProcAttr) {
	a.Cloneflags = ns.flags
	if ns.user {
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
		a.GidMappingsEnableSetgroups = false
	}
}

// refused reports whether err is the kernel refusing a namespace.
func refused(err error) bool {
	for _, errno := range []syscall.Errno{syscall.EPERM, syscall.EINVAL, syscall.ENOSPC, syscall.EUSERS, syscall.EACCES, syscall.ENOSYS} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// ready waits for the keeper's word that the command started, and
// returns how it was confined.
func (s *started) ready() (Confinement, error) {
	defer s.status.Close()
	data, err := io.ReadAll(io.LimitReader(s.status, 64<<10))
	if err != nil {
		return s.confined, fmt.Errorf("reading the keeper's status: %w", err)
	}
	if len(data) == 0 {
		return s.confined, errors.New("the keeper ended before it started the command")
	}
	var st keeperStatus
	if err := json.Unmarshal(data, &st); err != nil {
		return s.confined, fmt.Errorf("reading the keeper's status: %w", err)
	}
	if st.Error != "" {
		return s.confined, errors.New(st.Error)
	}
	s.confined.Writes = st.Writes
	return s.confined, nil
}

// finish does nothing: the keeper has killed what the command left
// behind before it exited.
func (s *started) finish() {}

// stop tells the keeper to end the command and everything it started.
func (s *started) stop() { _ = s.cmd.Process.Signal(syscall.SIGTERM) }

// kill kills the keeper and what is left in its group, when the keeper
// did not end in time.
func (s *started) kill() {
	_ = KillGroup(s.cmd.Process.Pid)
	_ = s.cmd.Process.Kill()
}
