//go:build unix && !linux

package devserver

import "syscall"

// setDeathSignal does nothing here: only Linux has a parent-death signal.
func setDeathSignal(*syscall.SysProcAttr) {}
