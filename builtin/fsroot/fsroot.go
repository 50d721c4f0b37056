package fsroot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Sentinel errors callers can branch on with errors.Is.
var (
	// ErrOutside is returned for a path that names something outside the
	// root, lexically (../x, /elsewhere) or through a symlink.
	ErrOutside = errors.New("path is outside the root")
	// ErrNotRegular is returned when a file operation meets a directory,
	// a named pipe, a socket, a device or anything else that is not a
	// regular file.
	ErrNotRegular = errors.New("not a regular file")
	// ErrNotDir is returned when a directory operation meets something
	// that is not a directory.
	ErrNotDir = errors.New("not a directory")
)

// Root is a directory that file tools may not leave. It is safe for
// concurrent use. Close it when done.
type Root struct {
	dir  string // absolute, cleaned
	real string // dir with symlinks evaluated, for absolute paths given through them
	root *os.Root
}

// Open opens dir as a Root. dir must exist and be a directory.
func Open(dir string) (*Root, error) {
	abs, err := existingDir(dir)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("fsroot: %w", err)
	}
	return &Root{dir: abs, real: realPath(abs), root: root}, nil
}

// existingDir returns dir made absolute, once it is known to name a
// directory.
func existingDir(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("fsroot: no directory given; pass the directory the agent works in")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("fsroot: %w", err)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("fsroot: directory %s does not exist; pass an existing directory", abs)
	case err != nil:
		return "", fmt.Errorf("fsroot: %w", err)
	case !fi.IsDir():
		return "", fmt.Errorf("fsroot: %s is not a directory; pass the directory that contains it (%s): %w",
			abs, filepath.Dir(abs), ErrNotDir)
	}
	return abs, nil
}

// realPath is abs with symlinks evaluated, or abs when they cannot be.
func realPath(abs string) string {
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return abs
	}
	return real
}

// Close releases the root. Dirs and files opened from it stay usable until
// they are closed themselves.
func (r *Root) Close() error { return r.root.Close() }

// Dir returns the absolute path of the root directory.
func (r *Root) Dir() string { return r.dir }

// Resolve turns a path given by a user or a model into a clean,
// slash-separated path relative to the root. The path may be relative to
// the root or absolute but inside it; "" and "." name the root itself,
// which resolves to ".". Resolve is lexical: it refuses ".." escapes and
// absolute paths elsewhere, and leaves symlinks to the open calls, which
// refuse those that leave the root.
func (r *Root) Resolve(p string) (string, error) {
	if p == "" {
		return ".", nil
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("path %q contains a NUL byte", p)
	}
	native := filepath.FromSlash(p)
	if filepath.IsAbs(native) {
		clean := filepath.Clean(native)
		for _, base := range []string{r.dir, r.real} {
			if rel, err := filepath.Rel(base, clean); err == nil && (rel == "." || filepath.IsLocal(rel)) {
				return filepath.ToSlash(rel), nil
			}
		}
		return "", fmt.Errorf("%q: %w %s; pass a path relative to the root instead", p, ErrOutside, r.dir)
	}
	clean := filepath.Clean(native)
	if clean == "." {
		return ".", nil
	}
	if !filepath.IsLocal(clean) {
		return "", fmt.Errorf("%q: %w; pass a path inside it, relative to the root", p, ErrOutside)
	}
	return filepath.ToSlash(clean), nil
}

// Stat resolves p and returns information about what it names, following
// symlinks that stay inside the root.
func (r *Root) Stat(p string) (fs.FileInfo, error) {
	rel, err := r.Resolve(p)
	if err != nil {
		return nil, err
	}
	fi, err := r.root.Stat(filepath.FromSlash(rel))
	return fi, r.wrap(rel, err)
}

// Lstat is Stat without following a final symlink.
func (r *Root) Lstat(p string) (fs.FileInfo, error) {
	rel, err := r.Resolve(p)
	if err != nil {
		return nil, err
	}
	fi, err := r.root.Lstat(filepath.FromSlash(rel))
	return fi, r.wrap(rel, err)
}

// Readlink returns the target of the symlink p, as stored.
func (r *Root) Readlink(p string) (string, error) {
	rel, err := r.Resolve(p)
	if err != nil {
		return "", err
	}
	target, err := r.root.Readlink(filepath.FromSlash(rel))
	return target, r.wrap(rel, err)
}

// OpenFile opens the regular file p for reading and returns it with its
// information. Anything that is not a regular file is refused with
// ErrNotRegular, without blocking: a named pipe is never waited on.
func (r *Root) OpenFile(p string) (*os.File, fs.FileInfo, error) {
	rel, err := r.Resolve(p)
	if err != nil {
		return nil, nil, err
	}
	// Stat first so that devices are never opened: opening one can have
	// side effects. openAs checks again after the open.
	fi, err := r.root.Stat(filepath.FromSlash(rel))
	if err != nil {
		return nil, nil, r.wrap(rel, err)
	}
	if err := checkRegular(rel, fi); err != nil {
		return nil, nil, err
	}
	f, fi, err := openAs(r.root, filepath.FromSlash(rel), rel)
	return f, fi, r.wrap(rel, err)
}

// ReadFile reads the regular file p, at most maxBytes of it. truncated is
// true when the file holds more than that. maxBytes must be positive.
func (r *Root) ReadFile(p string, maxBytes int64) (data []byte, truncated bool, err error) {
	if maxBytes <= 0 {
		return nil, false, fmt.Errorf("fsroot: maxBytes must be positive, got %d", maxBytes)
	}
	f, fi, err := r.OpenFile(p)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	return readAll(f, fi.Size(), maxBytes, nil)
}

// ReadDir returns the entries of directory p sorted by name. Entries are
// not followed: a symlink is reported as a symlink.
func (r *Root) ReadDir(p string) ([]fs.DirEntry, error) {
	rel, err := r.Resolve(p)
	if err != nil {
		return nil, err
	}
	f, err := r.root.Open(filepath.FromSlash(rel))
	if err != nil {
		return nil, r.wrap(rel, err)
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, r.wrap(rel, err)
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, nil
}

// WalkDir walks the tree at p in lexical order, like fs.WalkDir, calling
// fn with slash-separated paths relative to the root. It never follows a
// symlink below p (a symlinked directory is reported, not entered), so it
// cannot loop or leave the root. It stops with ctx's error when ctx ends.
func (r *Root) WalkDir(ctx context.Context, p string, fn fs.WalkDirFunc) error {
	rel, err := r.Resolve(p)
	if err != nil {
		return err
	}
	return fs.WalkDir(r.root.FS(), rel, func(name string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		return fn(name, d, r.wrap(name, err))
	})
}

// OpenDir opens directory p for a walk of its own. A symlink named by p
// itself is followed when it stays inside the root.
func (r *Root) OpenDir(p string) (*Dir, error) {
	rel, err := r.Resolve(p)
	if err != nil {
		return nil, err
	}
	sub, err := r.root.OpenRoot(filepath.FromSlash(rel))
	if err != nil {
		return nil, r.wrap(rel, err)
	}
	return &Dir{top: r, path: rel, root: sub}, nil
}

// wrap turns errors from os.Root into errors that name the relative path
// and say what to do.
func (r *Root) wrap(rel string, err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	switch {
	case errors.Is(err, ErrNotRegular), errors.Is(err, ErrOutside), errors.Is(err, ErrNotDir):
		return err
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: %w; use ls or glob to see what exists", rel, fs.ErrNotExist)
	case strings.Contains(err.Error(), "escapes from parent"):
		// os.Root's error for symlinks that leave the root is unexported.
		return fmt.Errorf("%s: %w (through a symlink)", rel, ErrOutside)
	}
	return fmt.Errorf("%s: %w", rel, err)
}

// Dir is an open directory inside a Root, for walks that open many
// entries: names are opened relative to it, one path component at a time.
// A Dir is safe for concurrent use. Close it when done.
type Dir struct {
	top  *Root
	path string
	root *os.Root
}

// Path returns the directory's slash-separated path relative to the root
// ("." for the root itself).
func (d *Dir) Path() string { return d.path }

// Close releases the directory.
func (d *Dir) Close() error { return d.root.Close() }

// ReadDir returns the directory's entries in the order the system gives
// them. Entries are not followed.
func (d *Dir) ReadDir() ([]fs.DirEntry, error) {
	f, err := d.root.Open(".")
	if err != nil {
		return nil, d.top.wrap(d.path, err)
	}
	defer f.Close()
	ents, err := readDirTyped(f, d.root)
	return ents, d.top.wrap(d.path, err)
}

// OpenDir opens the subdirectory name, an entry of d. A symlink is
// refused with ErrNotDir: walks do not follow symlinked directories.
func (d *Dir) OpenDir(name string) (*Dir, error) {
	rel, err := d.child(name)
	if err != nil {
		return nil, err
	}
	fi, err := d.root.Lstat(name)
	if err != nil {
		return nil, d.top.wrap(rel, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s: %w (%s)", rel, ErrNotDir, Kind(fi.Mode()))
	}
	sub, err := d.root.OpenRoot(name)
	if err != nil {
		return nil, d.top.wrap(rel, err)
	}
	return &Dir{top: d.top, path: rel, root: sub}, nil
}

// Lstat returns information about the entry name of d, without following
// a symlink.
func (d *Dir) Lstat(name string) (fs.FileInfo, error) {
	rel, err := d.child(name)
	if err != nil {
		return nil, err
	}
	fi, err := d.root.Lstat(name)
	return fi, d.top.wrap(rel, err)
}

// OpenFile opens the regular file name, an entry of d, for reading. A
// symlink is followed when its target is inside the Root (not only inside
// d). Anything that is not a regular file is refused with ErrNotRegular,
// without blocking.
func (d *Dir) OpenFile(name string) (*os.File, fs.FileInfo, error) {
	rel, err := d.child(name)
	if err != nil {
		return nil, nil, err
	}
	f, fi, err := openAs(d.root, name, rel)
	if err != nil && !errors.Is(err, ErrNotRegular) {
		// A symlink whose target is outside d but maybe inside the Root:
		// let the Root decide. Rare, so the extra lstat does not matter.
		if lfi, lerr := d.root.Lstat(name); lerr == nil && lfi.Mode()&fs.ModeSymlink != 0 {
			return d.top.OpenFile(rel)
		}
	}
	return f, fi, d.top.wrap(rel, err)
}

// ReadFile reads the regular file name, an entry of d, at most maxBytes of
// it, into buf (reused when large enough). truncated is true when the
// file holds more.
func (d *Dir) ReadFile(name string, maxBytes int64, buf []byte) (data []byte, truncated bool, err error) {
	if maxBytes <= 0 {
		return nil, false, fmt.Errorf("fsroot: maxBytes must be positive, got %d", maxBytes)
	}
	f, fi, err := d.OpenFile(name)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	return readAll(f, fi.Size(), maxBytes, buf)
}

func (d *Dir) child(name string) (string, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/`+string(filepath.Separator)) {
		return "", fmt.Errorf("%q is not a single entry name of %s", name, d.path)
	}
	return path.Join(d.path, name), nil
}

// openAs opens name in root as OpenRegular does; a refusal speaks of rel,
// as the tools do.
func openAs(root *os.Root, name, rel string) (*os.File, fs.FileInfo, error) {
	f, fi, err := OpenRegular(root, name)
	if errors.Is(err, ErrNotRegular) && fi != nil {
		return nil, nil, checkRegular(rel, fi)
	}
	return f, fi, err
}

func checkRegular(rel string, fi fs.FileInfo) error {
	if fi.Mode().IsRegular() {
		return nil
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory (%w); use ls, glob or grep on it", rel, ErrNotRegular)
	}
	return fmt.Errorf("%s is a %s (%w); only regular files can be read", rel, Kind(fi.Mode()), ErrNotRegular)
}

// readAll reads at most maxBytes from f into buf. size is what stat said,
// used to size the buffer; files that grow or lie (procfs) are still
// capped.
func readAll(f *os.File, size, maxBytes int64, buf []byte) ([]byte, bool, error) {
	want := min(size, maxBytes) + 1 // +1 to see truncation
	if int64(cap(buf)) < want {
		buf = make([]byte, 0, want)
	}
	buf = buf[:0]
	for {
		if int64(len(buf)) > maxBytes {
			return buf[:maxBytes], true, nil
		}
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(int(maxBytes)+1-len(buf), max(len(buf), 4096)))
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF || (n == 0 && err == nil) {
			return buf, false, nil
		}
		if err != nil {
			return buf, false, err
		}
		// A regular file that filled what stat promised is done; saves
		// the read that would return EOF. maxBytes still applies.
		if int64(len(buf)) == size && size > 0 && size <= maxBytes {
			return buf, false, nil
		}
	}
}
