//go:build unix

package process

import (
	"errors"
	"os/exec"
	"syscall"
)

// Contain makes cmd start in a process group of its own, so that
// KillGroup ends it together with every process it starts that stays in
// its group, and, where the platform has one (Linux), with a
// parent-death signal, so that the kernel kills it when this process
// dies. Call it before cmd starts.
func Contain(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	setDeathSignal(cmd.SysProcAttr, syscall.SIGKILL)
}

// KillGroup kills the process group of a process started by Contain or
// Kept, whose ID is pid: the process itself and every process left in
// its group. A group that is already gone is not an error.
func KillGroup(pid int) error {
	if pid <= 0 {
		return nil
	}
	err := syscall.Kill(-pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// Terminate asks the process pid to stop (SIGTERM): a keeper then kills
// what it keeps and exits. A process already gone is not an error.
func Terminate(pid int) error {
	if pid <= 0 {
		return nil
	}
	err := syscall.Kill(pid, syscall.SIGTERM)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}
