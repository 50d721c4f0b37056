//go:build !linux

package fsroot

import (
	"io/fs"
	"os"
)

// readDirTyped reads the entries of the open directory f.
func readDirTyped(f *os.File, _ *os.Root) ([]fs.DirEntry, error) {
	return f.ReadDir(-1)
}
