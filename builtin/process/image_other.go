//go:build !linux

package process

import "os"

// openImage makes a private copy of f: without sealed in-memory files,
// that is the way to run bytes nobody else can change.
func openImage(f *os.File, path string) (*Image, error) {
	return copyImage(f, path)
}
