//go:build !linux

package process

import (
	"io"
	"os"
	"path/filepath"
)

// openImage makes a private copy of f: without a way to start a process
// from an open file, that is the way to run bytes nobody else can change.
func openImage(f *os.File, path string) (*Image, error) {
	defer f.Close()
	return copyImage(f, path)
}

// copyImage makes the image a copy in a directory only this user may
// write, which no other program knows of.
func copyImage(r io.Reader, path string) (*Image, error) {
	dir, err := os.MkdirTemp("", "troupe-exec-")
	if err != nil {
		return nil, err
	}
	exe := filepath.Join(dir, filepath.Base(path))
	f, err := os.OpenFile(exe, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o700)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	digest, err := copyBytes(f, r, path)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &Image{Path: path, SHA256: digest, exe: exe, dir: dir}, nil
}
