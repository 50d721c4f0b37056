package process

import (
	"io"
	"os"
)

// openImage hashes f and keeps it open: the process is started from this
// very descriptor, so another file renamed into f's place never runs.
func openImage(f *os.File, path string) (*Image, error) {
	digest, err := copyBytes(io.Discard, f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Image{Path: path, SHA256: digest, file: f}, nil
}
