//go:build unix

package fsroot

import (
	"os"
	"syscall"
)

// openNonBlocking opens without blocking, so that a named pipe with no
// writer cannot hang the caller; regular files ignore O_NONBLOCK.
const openNonBlocking = os.O_RDONLY | syscall.O_NONBLOCK
