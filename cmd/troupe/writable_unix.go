//go:build unix

package main

import "syscall"

// access(2) modes; the same values on every Unix.
const (
	accessWrite   = 0x2 // W_OK
	accessExecute = 0x1 // X_OK
)

// canWrite reports whether this process may create entries in dir.
func canWrite(dir string) error {
	return syscall.Access(dir, accessWrite|accessExecute)
}
