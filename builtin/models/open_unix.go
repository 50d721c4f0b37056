//go:build unix

package models

import (
	"os"
	"syscall"
)

// openFlags opens a config file without blocking, so that a named pipe
// in its place cannot hang the caller; regular files ignore O_NONBLOCK.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK
