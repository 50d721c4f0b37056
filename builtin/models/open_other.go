//go:build !unix

package models

import "os"

// openFlags: systems without O_NONBLOCK rely on the stat check before open.
const openFlags = os.O_RDONLY
