//go:build unix

package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// createLocked makes dir/name and returns it locked. The file is locked
// before it appears under its name (made aside, then linked), so a file
// found under that name and not locked is one whose owner is gone.
func createLocked(dir, name string) (*os.File, error) {
	f, err := os.CreateTemp(dir, ".new-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	if err := os.Link(f.Name(), filepath.Join(dir, name)); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// tryLock takes the lock of the file at path without waiting. ok is
// false when another holds it. A missing file is free, unless create is
// set, when it is made; f is nil then.
func tryLock(path string, create bool) (f *os.File, ok bool, err error) {
	flags := os.O_RDWR
	if create {
		flags |= os.O_CREATE
	}
	f, err = os.OpenFile(path, flags, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, false, nil
	}
	if err != nil {
		f.Close()
		return nil, false, err
	}
	return f, true, nil
}
