package devserver

import "syscall"

// setDeathSignal has the kernel kill the server when the process that
// started it dies, so a test binary that is killed leaves no server.
func setDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
