//go:build unix

package main

import (
	"errors"
	"os"
	"syscall"
)

// lockSupported says whether live runs hold a lock on their transcript.
const lockSupported = true

// holdLock takes an exclusive lock on f, held until f is closed or the
// process ends, however it ends.
func holdLock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// lockedByOther reports whether another process holds the lock on f.
func lockedByOther(f *os.File) bool {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	if err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return false
	}
	return errors.Is(err, syscall.EWOULDBLOCK)
}
