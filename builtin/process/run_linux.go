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

	"golang.org/x/sys/unix"
)

// started is a command Run started: under a keeper, here.
type started struct {
	// cmd is the keeper.
	cmd *exec.Cmd
	// status is where the keeper says how it confined the command.
	status *os.File
	// ns are the namespaces the keeper has.
	ns namespace
}

// start starts c's keeper, which confines the command as c asks, in a
// network namespace of its own when c takes the network away and the
// kernel allows one, and a mount namespace where it hides the host's
// sockets when the kernel allows that too.
func start(c *Command, path string, out io.Writer) (*started, error) {
	if !keepers.Load() {
		return nil, fmt.Errorf("%w: call process.ServeIfKeeper first in main (and in TestMain)", ErrNoKeeper)
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer statusW.Close() // the keeper has its own once started
	for _, ns := range namespaces(c.Network) {
		req := confineRequest{Writable: c.Writable, HostSockets: c.Network}
		if ns.flags&syscall.CLONE_NEWNS != 0 {
			req.Hide, req.Visible = socketDirs(c.Env), c.Visible
		}
		request, err := json.Marshal(req)
		if err != nil {
			statusR.Close()
			return nil, err
		}
		cmd := &exec.Cmd{Path: path, Args: c.Args, Dir: c.Dir, Env: c.Env, Stdout: out, Stderr: out}
		k := keeperOf(cmd, request, statusW)
		ns.apply(k.SysProcAttr)
		err = k.Start()
		if err == nil {
			return &started{cmd: k, status: statusR, ns: ns}, nil
		}
		if ns.flags == 0 || !refused(err) {
			statusR.Close()
			return nil, err
		}
		slog.Debug("process: namespaces were refused; trying the next way", "flags", ns.flags, "err", err)
	}
	statusR.Close()
	return nil, errors.New("no way to start the keeper") // the last way has no namespace, and returned
}

// namespace is a way to start a keeper: the namespaces it gets.
type namespace struct {
	flags uintptr
	// user maps this process's user and group into a user namespace of
	// the keeper's own, which lets a user who is not root make the
	// other namespaces.
	user bool
}

// namespaces are the ways to try, in order, to start a keeper: with no
// network when network is false, and the host's sockets hidden in a
// mount namespace of its own; when the kernel refuses the mount
// namespace, without it; when it refuses the network namespace too,
// with the network.
func namespaces(network bool) []namespace {
	if network {
		return []namespace{{}}
	}
	const hidden = syscall.CLONE_NEWNET | syscall.CLONE_NEWNS
	if os.Geteuid() == 0 {
		return []namespace{
			{flags: hidden}, {flags: syscall.CLONE_NEWUSER | hidden, user: true},
			{flags: syscall.CLONE_NEWNET}, {flags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET, user: true}, {},
		}
	}
	return []namespace{
		{flags: syscall.CLONE_NEWUSER | hidden, user: true},
		{flags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET, user: true}, {},
	}
}

func (ns namespace) apply(a *syscall.SysProcAttr) {
	a.Cloneflags = ns.flags
	if ns.user {
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
		a.GidMappingsEnableSetgroups = false
		if ns.flags&syscall.CLONE_NEWNS != 0 {
			// Not root in its user namespace, the keeper needs this to
			// mount in its mount namespace; it drops it before it starts
			// the command.
			a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
		}
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
		return Confinement{}, fmt.Errorf("reading the keeper's status: %w", err)
	}
	if len(data) == 0 {
		return Confinement{}, errors.New("the keeper ended before it started the command")
	}
	var st keeperStatus
	if err := json.Unmarshal(data, &st); err != nil {
		return Confinement{}, fmt.Errorf("reading the keeper's status: %w", err)
	}
	if st.Error != "" {
		return Confinement{}, errors.New(st.Error)
	}
	if st.Note != "" {
		slog.Debug("process: the host's sockets stay in the command's reach", "why", st.Note)
	}
	return Confinement{
		// Landlock too: it alone keeps the command from reaching the
		// sockets through another process's root (/proc/PID/root) and,
		// as root, from unmounting what hides them.
		Network: s.ns.flags&syscall.CLONE_NEWNET != 0 && st.Hidden && st.Writes,
		Writes:  st.Writes,
	}, nil
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
