//go:build unix

package workspace

import (
	"context"
	"errors"
	"fmt"
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

// waitLock opens the file at path (made when create is set; a missing
// one is fs.ErrNotExist otherwise) and takes its lock, waiting for it as
// long as ctx allows. The holder may remove the file before it lets go:
// a lock taken on a file no longer under its name is let go and, when
// create is set, taken again on the file there now.
func waitLock(ctx context.Context, path string, create bool) (*os.File, error) {
	flags := os.O_RDWR
	if create {
		flags |= os.O_CREATE
	}
	for {
		f, err := os.OpenFile(path, flags, 0o600)
		if err != nil {
			return nil, err
		}
		if err := flockContext(ctx, f); err != nil {
			return nil, err
		}
		held, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		named, err := os.Stat(path)
		switch {
		case err == nil && os.SameFile(held, named):
			return f, nil
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			f.Close()
			return nil, err
		}
		f.Close()
		if !create {
			return nil, fs.ErrNotExist
		}
	}
}

// flockContext takes f's lock, waiting as long as ctx allows. A wait
// that ctx ends goes on in the background, and lets the lock go (and
// closes f) as soon as it gets it: the holder's work is bounded by its
// own context. f is closed on any error.
func flockContext(ctx context.Context, f *os.File) error {
	fd := int(f.Fd())
	err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		if err != nil {
			f.Close()
		}
		return err
	}
	got := make(chan error, 1)
	go func() { got <- syscall.Flock(fd, syscall.LOCK_EX) }()
	select {
	case err := <-got:
		if err != nil {
			f.Close()
		}
		return err
	case <-ctx.Done():
		go func() {
			<-got
			f.Close()
		}()
		return fmt.Errorf("waiting for the lock %s: %w", f.Name(), context.Cause(ctx))
	}
}
