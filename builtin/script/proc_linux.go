package script

import "syscall"

// procAttr makes the kernel kill a script host when the process that
// started it dies, so that none is left behind.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
