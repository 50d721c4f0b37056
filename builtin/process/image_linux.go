package process

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// openImage reads f into a sealed in-memory file: once sealed, nobody can
// change its bytes, and the process is started from it by descriptor.
// Where memfd_create is not available, it makes a private copy.
func openImage(f *os.File, path string) (*Image, error) {
	fd, err := unix.MemfdCreate("troupe:"+filepath.Base(path), unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return copyImage(f, path)
	}
	mem := os.NewFile(uintptr(fd), "memfd:"+path)
	defer mem.Close()
	digest, err := copyBytes(mem, f, path)
	if err != nil {
		return nil, err
	}
	if _, err := unix.FcntlInt(mem.Fd(), unix.F_ADD_SEALS, unix.F_SEAL_SEAL|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE); err != nil {
		return nil, fmt.Errorf("sealing the copy of %s: %w", path, err)
	}
	// The kernel refuses to execute a file open for writing (ETXTBSY):
	// keep a read-only descriptor of the sealed file instead.
	ro, err := os.Open(fmt.Sprintf("/proc/self/fd/%d", mem.Fd()))
	if err != nil {
		return nil, fmt.Errorf("reopening the copy of %s: %w", path, err)
	}
	return &Image{Path: path, SHA256: digest, file: ro}, nil
}
