package fsroot

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// OpenBeneath opens the directory sub of top as a Root, reaching it from
// top, never through the path top/sub as it stands: sub ("" or "." for
// top itself) must be a relative path whose every element is a directory
// inside top, none a symlink. It is the root of a directory that
// something else may replace while top stays put, such as an agent's
// directory below the top of its workspace, which a command run in the
// workspace could swap for a symlink to elsewhere. The Root holds the
// directory it found, whatever later happens to the path; Dir still
// names the path, top/sub.
func OpenBeneath(top, sub string) (*Root, error) {
	abs, err := existingDir(top)
	if err != nil {
		return nil, err
	}
	rel := filepath.Clean(filepath.FromSlash(sub))
	if rel != "." && !filepath.IsLocal(rel) {
		return nil, fmt.Errorf("fsroot: %q is not a path inside %s: %w", sub, abs, ErrOutside)
	}
	topRoot, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("fsroot: %w", err)
	}
	defer topRoot.Close()
	if err := realDirs(topRoot, abs, rel); err != nil {
		return nil, err
	}
	// Each element was checked, but may change before the open: os.Root
	// still keeps the open inside top, whatever it meets.
	root, err := topRoot.OpenRoot(rel)
	if err != nil {
		if strings.Contains(err.Error(), "escapes from parent") {
			err = ErrOutside
		}
		return nil, fmt.Errorf("fsroot: opening %s inside %s: %w", filepath.ToSlash(rel), abs, err)
	}
	return &Root{dir: filepath.Join(abs, rel), real: filepath.Join(realPath(abs), rel), root: root}, nil
}

// realDirs checks, from the top down, that every element of rel is a
// directory inside the root top, and no symlink.
func realDirs(top *os.Root, topPath, rel string) error {
	if rel == "." {
		return nil
	}
	p := ""
	for _, el := range strings.Split(rel, string(filepath.Separator)) {
		p = filepath.Join(p, el)
		fi, err := top.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("fsroot: %s does not exist in %s any more; make it again as a directory: %w", filepath.ToSlash(p), topPath, fs.ErrNotExist)
		case err != nil:
			return fmt.Errorf("fsroot: %s in %s: %w", filepath.ToSlash(p), topPath, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("fsroot: %s in %s is a symlink, and only a real directory there is used (something replaced it?); remove the link and make the directory again: %w", filepath.ToSlash(p), topPath, ErrNotDir)
		case !fi.IsDir():
			return fmt.Errorf("fsroot: %s in %s is a %s, not a directory; remove it and make the directory again: %w", filepath.ToSlash(p), topPath, Kind(fi.Mode()), ErrNotDir)
		}
	}
	return nil
}

// CheckDir reports an error when Dir no longer names the directory the
// Root holds (it was removed, or replaced by a symlink or by another
// directory). A caller that hands Dir to another program, which opens
// the path anew, checks it first.
func (r *Root) CheckDir() error {
	held, err := r.root.Stat(".")
	if err != nil {
		return fmt.Errorf("fsroot: %w", err)
	}
	now, err := os.Stat(r.dir)
	if err != nil || !os.SameFile(held, now) {
		return fmt.Errorf("fsroot: %s is no longer the directory that was opened (it was removed or replaced, by a symlink say), so its path is not handed on: %w", r.dir, ErrOutside)
	}
	return nil
}
