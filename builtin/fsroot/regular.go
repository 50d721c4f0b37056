package fsroot

import (
	"fmt"
	"io/fs"
	"os"
)

// OpenRegular opens name for reading, inside root when root is not nil,
// and returns it with its FileInfo only when it is a regular file.
// Anything else (a named pipe, a device, a socket, a directory) is refused
// with an error wrapping ErrNotRegular that says what it is (its FileInfo
// is returned too, for callers that say it their own way), and a named
// pipe or device in the file's place never blocks the call: the file is
// opened without blocking (regular files ignore that), then checked. Every
// file troupe reads from outside (definitions, scripts, config, lock files,
// transcripts, the tools' files) is opened this way, so nothing put in
// their place can hang it.
func OpenRegular(root *os.Root, name string) (*os.File, fs.FileInfo, error) {
	var f *os.File
	var err error
	if root != nil {
		f, err = root.OpenFile(name, openNonBlocking, 0)
	} else {
		f, err = os.OpenFile(name, openNonBlocking, 0)
	}
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fi, fmt.Errorf("%s is a %s: %w", name, Kind(fi.Mode()), ErrNotRegular)
	}
	return f, fi, nil
}

// Kind names the kind of file a mode describes, for messages and listings:
// "directory", "symlink", "named pipe", "socket", "device", "regular file"
// or "special file".
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	case m.IsRegular():
		return "regular file"
	}
	return "special file"
}
