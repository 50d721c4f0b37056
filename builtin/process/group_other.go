//go:build !unix

package process

import "os/exec"

// Contain does nothing where there are no process groups.
func Contain(cmd *exec.Cmd) {}

// KillGroup does nothing where there are no process groups; the caller
// kills the process itself.
func KillGroup(pid int) error { return nil }

// Terminate does nothing here; the caller kills the process itself.
func Terminate(pid int) error { return nil }
