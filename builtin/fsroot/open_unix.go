//go:build unix

package fsroot

import (
	"os"
	"syscall"
)

// openFlags opens without blocking so that a named pipe with no writer
// cannot hang the caller; regular files ignore O_NONBLOCK.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK
