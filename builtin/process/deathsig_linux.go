package process

import "syscall"

func setDeathSignal(a *syscall.SysProcAttr, sig syscall.Signal) { a.Pdeathsig = sig }
