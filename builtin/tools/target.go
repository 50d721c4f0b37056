package tools

import (
	"errors"
	"fmt"
	"hash/maphash"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/troupe-dev/troupe/builtin/fsroot"
)

// Limits of write and edit.
const (
	// maxFileSize bounds what write and edit put in a file, and the
	// files edit reads.
	maxFileSize = 4 << 20
	// maxWritePath bounds a path to write, in bytes: os.Root resolves
	// one name at a time, so no system limit would stop a path of
	// thousands of nested directories.
	maxWritePath = 1024
	// maxNameLen is the longest name of a file or directory most file
	// systems allow, in bytes; checked before anything is made, so that
	// a long last name does not leave its parents behind.
	maxNameLen = 255
)

// target is a file that write or edit may write: checked, not yet
// changed.
type target struct {
	rel string // clean, slash-separated, relative to the workspace
	// info describes the file that exists now; nil when there is none.
	info fs.FileInfo
	// newDirs are the parent directories to make, outermost first.
	newDirs []string
}

// resolveTarget resolves p as the read tools do, then refuses what the
// changing tools must not write: the workspace's top, anything inside
// .git, paths through a symlink (inside the workspace or not), and
// anything that is not a regular file. Nothing is changed on disk.
func resolveTarget(root *fsroot.Root, p string) (*target, error) {
	rel, err := root.Resolve(p)
	if err != nil {
		return nil, err
	}
	if rel == "." {
		return nil, fmt.Errorf("%q names the top directory of the workspace; give the path of a file in it", p)
	}
	if err := checkWritablePath(rel); err != nil {
		return nil, err
	}
	names := strings.Split(rel, "/")
	t := &target{rel: rel}
	for i := range names {
		prefix := strings.Join(names[:i+1], "/")
		last := i == len(names)-1
		fi, err := root.Lstat(prefix)
		if errors.Is(err, fs.ErrNotExist) {
			for j := i; j < len(names)-1; j++ {
				t.newDirs = append(t.newDirs, strings.Join(names[:j+1], "/"))
			}
			return t, nil
		}
		if err != nil {
			return nil, err
		}
		switch mode := fi.Mode(); {
		case mode&fs.ModeSymlink != 0:
			return nil, symlinkRefusal(root, prefix, rel)
		case !last && !mode.IsDir():
			return nil, fmt.Errorf("%s is a %s, not a directory, so %s cannot be in it (%w)", prefix, fsroot.Kind(mode), rel, fsroot.ErrNotDir)
		case last && mode.IsDir():
			return nil, fmt.Errorf("%s is a directory (%w); give the path of a file", rel, fsroot.ErrNotRegular)
		case last && !mode.IsRegular():
			return nil, fmt.Errorf("%s is a %s (%w); only regular files can be written", rel, fsroot.Kind(mode), fsroot.ErrNotRegular)
		case last:
			t.info = fi
		}
	}
	return t, nil
}

// checkWritablePath refuses paths too long to write and paths inside
// .git.
func checkWritablePath(rel string) error {
	if len(rel) > maxWritePath {
		return fmt.Errorf("the path is %d bytes long; give one of at most %d", len(rel), maxWritePath)
	}
	for _, name := range strings.Split(rel, "/") {
		if len(name) > maxNameLen {
			return fmt.Errorf("the name %.40q... is %d bytes long; a file or directory name may have at most %d", name, len(name), maxNameLen)
		}
		if isGitName(name) {
			return fmt.Errorf("%s is inside %s, the workspace's link to its repository, which write and edit never change; change the project's own files", rel, name)
		}
	}
	return nil
}

// isGitName reports whether a file system could take name for ".git":
// case-insensitive ones (".GIT"), Windows, which drops trailing dots and
// spaces (".git. ") and knows the short name "GIT~1", and macOS, which
// ignores some invisible code points (".g\u200cit").
func isGitName(name string) bool {
	name = strings.Map(func(r rune) rune {
		if isIgnorableRune(r) {
			return -1
		}
		return r
	}, name)
	name = strings.TrimRight(name, ". ")
	return strings.EqualFold(name, ".git") || strings.EqualFold(name, "git~1")
}

// isIgnorableRune reports the code points HFS+ leaves out of names, as
// git's own check (is_hfs_dot_git) lists them.
func isIgnorableRune(r rune) bool {
	return (r >= 0x200c && r <= 0x200f) || (r >= 0x202a && r <= 0x202e) ||
		(r >= 0x206a && r <= 0x206f) || r == 0xfeff
}

// symlinkRefusal explains why a path through the symlink link is not
// written, and names the real path when it is inside the workspace.
func symlinkRefusal(root *fsroot.Root, link, rel string) error {
	rest := strings.TrimPrefix(strings.TrimPrefix(rel, link), "/")
	to, where := symlinkTarget(root, link)
	switch where {
	case linkOutside:
		return fmt.Errorf("%q: %w (through the symlink %s); write and edit change files inside the workspace only", rel, fsroot.ErrOutside, link)
	case linkBroken:
		return fmt.Errorf("%s is a symlink that does not resolve (it loops, or leads through something that is not a directory); write and edit do not follow symlinks: give a real path", link)
	}
	real := path.Join(to, rest)
	if checkWritablePath(real) != nil {
		return fmt.Errorf("%s is a symlink to %s, where write and edit do not write", link, to)
	}
	return fmt.Errorf("%s is a symlink to %s; write and edit do not follow symlinks: give the real path, %s", link, to, real)
}

// Where a symlink leads.
const (
	linkInside = iota
	linkOutside
	linkBroken
)

// symlinkTarget returns where the symlink link leads, relative to the
// root. It only words an error: the refusal does not depend on it.
func symlinkTarget(root *fsroot.Root, link string) (string, int) {
	abs := filepath.Join(root.Dir(), filepath.FromSlash(link))
	real, err := filepath.EvalSymlinks(abs)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", linkBroken
	}
	if err != nil {
		// A dangling link: judge its text.
		target, err := root.Readlink(link)
		if err != nil {
			return "", linkBroken
		}
		if !filepath.IsAbs(target) {
			target = path.Join(path.Dir(link), filepath.ToSlash(target))
		}
		real = target
	}
	to, err := root.Resolve(real)
	if err != nil {
		return "", linkOutside
	}
	return to, linkInside
}

// put writes data to t: it makes the missing parent directories, then
// replaces the file atomically, keeping an existing file's permissions
// (new files get 0644). When it fails, the directories it made are
// removed again.
func put(root *fsroot.Root, t *target, data []byte) error {
	perm := fs.FileMode(0o644)
	if t.info != nil {
		perm = t.info.Mode().Perm()
	}
	var made []string
	var err error
	for _, d := range t.newDirs {
		err = root.Mkdir(d, 0o755)
		if errors.Is(err, fs.ErrExist) {
			err = nil // made meanwhile by someone else: theirs to keep
			continue
		}
		if err != nil {
			break
		}
		made = append(made, d)
	}
	if err == nil {
		err = root.ReplaceFile(t.rel, data, perm)
	}
	if err != nil {
		for i := len(made) - 1; i >= 0; i-- {
			_ = root.Remove(made[i])
		}
	}
	return err
}

// fileLocks serialise the writes and edits of one file by calls made at
// once (an agent may call several tools together), so that an edit
// reads what the write before it wrote. Striped: a fixed, small set of
// locks, whatever the number of files.
var (
	fileLocks    [64]sync.Mutex
	fileLockSeed = maphash.MakeSeed()
)

// lockFile locks the file at the absolute path abs and returns the
// unlock.
func lockFile(abs string) func() {
	m := &fileLocks[maphash.String(fileLockSeed, abs)%uint64(len(fileLocks))]
	m.Lock()
	return m.Unlock
}
