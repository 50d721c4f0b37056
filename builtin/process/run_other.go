//go:build !linux

package process

import (
	"io"
	"os/exec"
	"time"
)

// started is a command Run started: contained in a process group of its
// own where there are process groups, and not confined.
type started struct {
	cmd *exec.Cmd
}

// start starts the command as it is: there is no keeper here, and no
// confinement.
func start(c *Command, path string, out io.Writer) (*started, error) {
	cmd := &exec.Cmd{Path: path, Args: c.Args, Dir: c.Dir, Env: c.Env, Stdout: out, Stderr: out}
	Contain(cmd)
	// A process left behind may hold the output open: Wait must not wait
	// for it long.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &started{cmd: cmd}, nil
}

func (s *started) ready() (Confinement, error) { return Confinement{}, nil }

// stop kills the command's group, and the command where there are no
// groups.
func (s *started) stop() {
	_ = KillGroup(s.cmd.Process.Pid)
	_ = s.cmd.Process.Kill()
}

func (s *started) kill() { s.stop() }

// finish kills what the command left in its group (where there are
// groups); a process that left the group lives on here.
func (s *started) finish() { _ = KillGroup(s.cmd.Process.Pid) }
