package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/troupe-dev/troupe/builtin/fsroot"
)

// carryOut carries the plan out in the tree dir through an os.Root, so that
// nothing is written outside it: removals first (deepest first, with the
// directories they leave empty), then each file, made aside in its
// directory and renamed into place, so that a reader never sees half a
// file. Directories on the way are made as needed and must be real
// directories: nothing is written through a symlink. An error stops it
// and says what was written by then.
func (plan *applyPlan) carryOut(dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	var done []string
	stopped := func(p string, err error) error {
		if len(done) == 0 {
			return fmt.Errorf("%s: %w; nothing was written", p, err)
		}
		return fmt.Errorf("%s: %w; written before it stopped: %s", p, err, strings.Join(done, ", "))
	}
	for _, p := range slices.Backward(plan.remove) {
		if err := removeEntry(root, p); err != nil {
			return stopped(p, err)
		}
		done = append(done, p)
	}
	for _, e := range plan.write {
		if err := makeParents(root, e.path); err != nil {
			return stopped(e.path, err)
		}
		staged := filepath.Join(plan.staged, filepath.FromSlash(e.path))
		if e.mode == modeSymlink {
			err = replaceSymlink(root, e.path, staged)
		} else {
			err = replaceFile(root, e.path, staged, e.mode == modeExecutable)
		}
		if err != nil {
			return stopped(e.path, err)
		}
		done = append(done, e.path)
	}
	return nil
}

// removeEntry removes the file or symlink p, and then the directories
// above it that it leaves empty, as a checkout does.
func removeEntry(root *os.Root, p string) error {
	if err := realParents(root, p); err != nil {
		return err
	}
	if err := root.Remove(filepath.FromSlash(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		if root.Remove(filepath.FromSlash(d)) != nil {
			break // not empty: the rest above are not either
		}
	}
	return nil
}

// realParents checks that every directory above p is a directory, not a
// symlink to one.
func realParents(root *os.Root, p string) error {
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		fi, err := root.Lstat(filepath.FromSlash(d))
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is a %s, not a directory: %w", d, fsroot.Kind(fi.Mode()), fsroot.ErrNotDir)
		}
	}
	return nil
}

// makeParents makes the directories above p that are missing, and
// checks that those there are directories, not symlinks.
func makeParents(root *os.Root, p string) error {
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		d := filepath.FromSlash(strings.Join(parts[:i], "/"))
		fi, err := root.Lstat(d)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := root.Mkdir(d, 0o755); err != nil {
				return err
			}
		case err != nil:
			return err
		case !fi.IsDir():
			return fmt.Errorf("%s is a %s, not a directory: %w", d, fsroot.Kind(fi.Mode()), fsroot.ErrNotDir)
		}
	}
	return nil
}

// replaceFile makes p a regular file with the content of the staged file
// from, executable or not; a file p replaces keeps its other permission
// bits.
func replaceFile(root *os.Root, p, from string, executable bool) error {
	src, _, err := fsroot.OpenRegular(nil, from)
	if err != nil {
		return err
	}
	defer src.Close()
	perm := fs.FileMode(0o644)
	if fi, err := root.Lstat(filepath.FromSlash(p)); err == nil && fi.Mode().IsRegular() {
		perm = fi.Mode().Perm() &^ 0o111
	}
	if executable {
		perm |= (perm & 0o444) >> 2 // x wherever r
	}
	tmp, f, err := createAside(root, p)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, src)
	if err == nil {
		err = f.Chmod(perm) // set, whatever the umask says
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, filepath.FromSlash(p))
	}
	if err != nil {
		_ = root.Remove(tmp)
	}
	return err
}

// replaceSymlink makes p the symlink the staged symlink from is, made
// aside and renamed over whatever p was.
func replaceSymlink(root *os.Root, p, from string) error {
	target, err := os.Readlink(from)
	if err != nil {
		return err
	}
	for range 10 {
		tmp := asideName(p)
		err := root.Symlink(target, tmp)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err == nil {
			if err = root.Rename(tmp, filepath.FromSlash(p)); err != nil {
				_ = root.Remove(tmp)
			}
		}
		return err
	}
	return fmt.Errorf("%s: no free name beside it for a new symlink", p)
}

// createAside makes a new file beside p, readable by its owner only
// until it is complete, and returns its name in the root.
func createAside(root *os.Root, p string) (string, *os.File, error) {
	for range 10 {
		tmp := asideName(p)
		f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return tmp, f, err
	}
	return "", nil, fmt.Errorf("%s: no free name beside it for a new file", p)
}

// asideName is a name in p's directory that no file is likely to have.
func asideName(p string) string {
	return filepath.FromSlash(path.Join(path.Dir(p), ".troupe-apply-"+strconv.FormatUint(rand.Uint64(), 36)))
}
