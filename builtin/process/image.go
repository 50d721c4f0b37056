package process

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/troupe-dev/troupe/builtin/fsroot"
)

// MaxImageSize bounds the executables Open reads.
const MaxImageSize = 1 << 30

// ErrTooLarge is wrapped by Open's error for a file over MaxImageSize.
var ErrTooLarge = errors.New("executable too large")

// An Image is an executable, opened once and hashed as it was read. A
// process started from it runs that file, whatever is renamed into its
// path afterwards: checking a checksum and then running the path would run
// whatever was put there in between. (Rewriting the file's own bytes in
// place takes write permission on the plugin itself.)
type Image struct {
	// Path is the file the bytes were read from.
	Path string
	// SHA256 is the hex SHA-256 of the bytes.
	SHA256 string

	// file is the executable, open (Linux); exe and dir are a private
	// copy and its directory (elsewhere).
	file *os.File
	exe  string
	dir  string

	// info is what the descriptor that was hashed said of the file,
	// opened when Digests.Open began reading it, and recalled whether
	// the checksum came from a Digests memo instead.
	info     os.FileInfo
	opened   time.Time
	recalled bool
}

// Open reads the executable at path into an image. Anything but a regular
// file, and a file over MaxImageSize, is refused; opening never blocks on
// a named pipe in the file's place.
func Open(path string) (*Image, error) {
	f, _, err := openExecutable(path)
	if err != nil {
		return nil, err
	}
	return openImage(f, path) // takes f
}

// Checksum returns the hex SHA-256 of the executable at path, read as
// Open reads it.
func Checksum(path string) (string, error) {
	f, _, err := openExecutable(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return copyBytes(io.Discard, f, path)
}

// openExecutable opens a regular file of at most MaxImageSize bytes,
// without blocking on a named pipe in its place, and returns what the
// open descriptor says of it.
func openExecutable(path string) (*os.File, os.FileInfo, error) {
	f, fi, err := fsroot.OpenRegular(nil, path)
	if errors.Is(err, fsroot.ErrNotRegular) {
		return nil, nil, fmt.Errorf("%s is a %s, not an executable file", path, fsroot.Kind(fi.Mode()))
	}
	if err != nil {
		return nil, nil, err
	}
	if fi.Size() > MaxImageSize {
		f.Close()
		return nil, nil, fmt.Errorf("%w: %s is over %d MiB", ErrTooLarge, path, MaxImageSize>>20)
	}
	return f, fi, nil
}

// Command returns a command that runs the image with args after argv[0],
// which is the image's Path. The image's file is the command's first
// ExtraFiles entry (descriptor 3): add others after it. Close the image
// once the process has started.
func (im *Image) Command(args ...string) *exec.Cmd {
	argv := append([]string{im.Path}, args...)
	if im.file != nil {
		return &exec.Cmd{Path: "/proc/self/fd/3", Args: argv, ExtraFiles: []*os.File{im.file}}
	}
	return &exec.Cmd{Path: im.exe, Args: argv}
}

// Close frees the image. Processes started from it run on.
func (im *Image) Close() error {
	var err error
	if im.file != nil {
		err = im.file.Close()
	}
	if im.dir != "" {
		err = errors.Join(err, os.RemoveAll(im.dir))
	}
	return err
}

// copyBytes copies at most MaxImageSize bytes of r to w, hashing them.
func copyBytes(w io.Writer, r io.Reader, path string) (string, error) {
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(r, MaxImageSize+1))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	if n > MaxImageSize {
		return "", fmt.Errorf("%w: %s is over %d MiB", ErrTooLarge, path, MaxImageSize>>20)
	}
	return sum(h), nil
}

func sum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }
