//go:build unix

package devserver

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// startGroup starts cmd as the leader of a process group of its own, so
// that stop reaches whatever it starts.
func startGroup(cmd *exec.Cmd) error {
	attr := &syscall.SysProcAttr{Setpgid: true}
	setDeathSignal(attr)
	cmd.SysProcAttr = attr
	return cmd.Start()
}

func (s *Server) stop() error {
	if err := syscall.Kill(-s.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("devserver: kill process group %d: %w", s.pid, err)
	}
	deadline := time.NewTimer(stopTimeout)
	defer deadline.Stop()
	select {
	case <-s.exited:
	case <-deadline.C:
		return fmt.Errorf("devserver: the server (pid %d) did not exit within %s of SIGKILL", s.pid, stopTimeout)
	}
	// Another process of the group, if the server started any, is reaped
	// by init in its own time: wait for it, within the same bound.
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		err := syscall.Kill(-s.pid, 0)
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		select {
		case <-deadline.C:
			return fmt.Errorf("devserver: a process of the server's group %d outlived it by %s (kill -0: %v)", s.pid, stopTimeout, err)
		case <-tick.C:
		}
	}
}
