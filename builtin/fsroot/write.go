package fsroot

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strconv"
)

// Mkdir makes the directory p, whose parent must exist. Like every
// operation of a Root it cannot reach outside the root.
func (r *Root) Mkdir(p string, perm fs.FileMode) error {
	rel, err := r.Resolve(p)
	if err != nil {
		return err
	}
	return r.wrap(rel, r.root.Mkdir(filepath.FromSlash(rel), perm))
}

// Remove removes the file or empty directory p (a symlink itself, not
// its target).
func (r *Root) Remove(p string) error {
	rel, err := r.Resolve(p)
	if err != nil {
		return err
	}
	return r.wrap(rel, r.root.Remove(filepath.FromSlash(rel)))
}

// ReplaceFile makes p a regular file holding data, with permission bits
// perm, atomically: data goes to a new temporary file in p's directory,
// which is then renamed over p. A reader sees the old content or the
// new, never a part; a crash leaves the old file; and the old file's
// inode is never written, so a hard link to it elsewhere keeps its
// content. Whatever p named before (a symlink included) is replaced, not
// followed: callers that mean to refuse some targets check them first.
// p's directory must exist.
func (r *Root) ReplaceFile(p string, data []byte, perm fs.FileMode) error {
	rel, err := r.Resolve(p)
	if err != nil {
		return err
	}
	if rel == "." {
		return fmt.Errorf("the root itself cannot be replaced by a file: %w", ErrNotRegular)
	}
	tmp, f, err := r.createTemp(path.Dir(rel))
	if err != nil {
		return err
	}
	err = writeSynced(f, data, perm)
	if err == nil {
		err = r.wrap(rel, r.root.Rename(filepath.FromSlash(tmp), filepath.FromSlash(rel)))
	}
	if err != nil {
		_ = r.root.Remove(filepath.FromSlash(tmp))
		return err
	}
	return nil
}

// createTemp makes a new, empty file in dir with a name no other file
// has, readable and writable by its owner only until it is complete.
func (r *Root) createTemp(dir string) (string, *os.File, error) {
	for range 10 {
		name := path.Join(dir, ".tmp-"+strconv.FormatUint(rand.Uint64(), 36))
		f, err := r.root.OpenFile(filepath.FromSlash(name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", nil, r.wrap(dir, err)
		}
		return name, f, nil
	}
	return "", nil, fmt.Errorf("%s: could not find a free temporary file name", dir)
}

// writeSynced writes data to f, sets its mode, flushes it to the disk
// and closes it.
func writeSynced(f *os.File, data []byte, perm fs.FileMode) error {
	_, err := f.Write(data)
	if err == nil {
		// Set explicitly: the umask must not narrow the mode of a file
		// being replaced.
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
