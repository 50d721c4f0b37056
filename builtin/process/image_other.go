//go:build !linux

package process

import "os"

// openImage makes a private copy of f: without a way to start a process
// from an open file, that is the way to run bytes nobody else can change.
func openImage(f *os.File, path string) (*Image, error) {
	defer f.Close()
	return copyImage(f, path)
}
