package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/fsroot"
	"github.com/troupe-dev/troupe/builtin/gitsafe"
)

// maxInTheWay bounds the entries of a directory in the user's tree that
// Apply looks through when the changes put a file where it stands.
const maxInTheWay = 10_000

// applyPlan is what Apply writes into the user's tree.
type applyPlan struct {
	write  []planEntry // sorted by path
	remove []string    // sorted
	// staged is a directory of troupe's where git checked out the files
	// to write, under their paths.
	staged    string
	conflicts []agenttypes.Conflict
}

// planEntry is one file to write.
type planEntry struct {
	path  string
	mode  string // git's: 100644, 100755 or 120000
	oid   string // its blob
	added bool   // not in the tree before
}

// paths lists every path the plan touches, sorted.
func (plan *applyPlan) paths() []string {
	out := slices.Clone(plan.remove)
	for _, e := range plan.write {
		out = append(out, e.path)
	}
	slices.Sort(out)
	return out
}

// tracked lists the paths the plan touches that the tree merged holds:
// those it removes or changes.
func (plan *applyPlan) tracked() []string {
	out := slices.Clone(plan.remove)
	for _, e := range plan.write {
		if !e.added {
			out = append(out, e.path)
		}
	}
	return out
}

// result is what the plan writes, as Apply reports it.
func (plan *applyPlan) result() Applied {
	res := Applied{Removed: slices.Clone(plan.remove), Conflicts: plan.conflicts}
	for _, e := range plan.write {
		res.Written = append(res.Written, e.path)
	}
	res.UpToDate = len(res.Written) == 0 && len(res.Removed) == 0 && len(res.Conflicts) == 0
	return res
}

// stageFiles has git check the files to write out into plan.staged,
// as a checkout would write them: line endings converted as the tree's
// attributes say (the changed .gitattributes files are among them, and
// the others are in the work tree as merged); filters, which would run
// programs, off. The private index it takes, in tmp, holds only them.
func (plan *applyPlan) stageFiles(ctx context.Context, g *gitsafe.Git, tmp string) error {
	if len(plan.write) == 0 {
		return nil
	}
	f, err := os.CreateTemp(tmp, "troupe-index-*")
	if err != nil {
		return err
	}
	index := f.Name()
	f.Close()
	defer os.Remove(index)
	if err := os.Remove(index); err != nil { // git makes it
		return err
	}
	gi := g.With("GIT_INDEX_FILE=" + index)
	var entries, list bytes.Buffer
	for _, e := range plan.write {
		fmt.Fprintf(&entries, "%s %s\t%s\x00", e.mode, e.oid, e.path)
		list.WriteString(e.path + "\x00")
	}
	if err := gi.Run(ctx, &entries, nil, "update-index", "-z", "--add", "--index-info"); err != nil {
		return fmt.Errorf("listing the changed files: %w", err)
	}
	if err := gi.Run(ctx, &list, nil, "checkout-index", "-z", "--stdin", "--prefix="+plan.staged+string(filepath.Separator)); err != nil {
		return fmt.Errorf("checking out the changed files: %w", err)
	}
	return nil
}

// checkDisk looks at the user's tree, changing nothing, for what would
// stop the plan: a symlink or file where a directory is needed, a
// directory where a file goes, an ignored file that the changes add with
// other content. Each is a conflict. A file the tree already holds as
// the changes have it is dropped from the plan.
func (plan *applyPlan) checkDisk(dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	removing := func(p string) bool { _, ok := slices.BinarySearch(plan.remove, p); return ok }
	conflict := func(p, why string) {
		plan.conflicts = append(plan.conflicts, agenttypes.Conflict{Path: p, Reason: why})
	}
	for _, p := range plan.remove {
		if bad := blockedParent(root, p, removing); bad != "" {
			conflict(p, bad+" in your tree is a symlink or a file, where the changes see a directory")
		}
	}
	var keep []planEntry
	for _, e := range plan.write {
		if bad := blockedParent(root, e.path, removing); bad != "" {
			conflict(e.path, bad+" in your tree is a symlink or a file, where the changes see a directory")
			continue
		}
		fi, err := root.Lstat(filepath.FromSlash(e.path))
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR): // below a file the plan removes
		case err != nil:
			return err
		case fi.IsDir():
			if !onlyRemoved(root, e.path, removing) {
				conflict(e.path, "a directory in your tree is in the way of a file the changes add; move it aside")
				continue
			}
		case e.added:
			if same, err := plan.sameAsStaged(root, e); err != nil || !same {
				conflict(e.path, "your tree holds this file untracked and ignored, and the changes add it with other content; move it aside")
				continue
			}
			continue // there already
		}
		keep = append(keep, e)
	}
	plan.write = keep
	return nil
}

// blockedParent returns the first directory above p, if any, that the
// tree holds as something other than a directory (a symlink, a file),
// unless the plan removes it.
func blockedParent(root *os.Root, p string, removing func(string) bool) string {
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		d := strings.Join(parts[:i], "/")
		fi, err := root.Lstat(filepath.FromSlash(d))
		if errors.Is(err, fs.ErrNotExist) {
			return ""
		}
		if err != nil || !fi.IsDir() {
			if err == nil && removing(d) {
				return ""
			}
			return d
		}
	}
	return ""
}

// onlyRemoved reports whether every file below the directory p is one
// the plan removes, so that p is gone when the file is written.
func onlyRemoved(root *os.Root, p string, removing func(string) bool) bool {
	n, ok := 0, true
	err := fs.WalkDir(root.FS(), p, func(q string, d fs.DirEntry, err error) error {
		if n++; err != nil || n > maxInTheWay {
			ok = false
			return fs.SkipAll
		}
		if !d.IsDir() && !removing(q) {
			ok = false
			return fs.SkipAll
		}
		return nil
	})
	return ok && err == nil
}

// sameAsStaged reports whether the tree's file at e.path is what the
// plan would write: the same kind, content and executable bit.
func (plan *applyPlan) sameAsStaged(root *os.Root, e planEntry) (bool, error) {
	staged := filepath.Join(plan.staged, filepath.FromSlash(e.path))
	if e.mode == modeSymlink {
		want, err := os.Readlink(staged)
		if err != nil {
			return false, err
		}
		got, err := root.Readlink(filepath.FromSlash(e.path))
		return err == nil && got == want, nil
	}
	want, err := readSmall(nil, staged)
	if err != nil {
		return false, err
	}
	got, err := readSmall(root, filepath.FromSlash(e.path))
	if err != nil {
		return false, nil
	}
	fi, err := root.Lstat(filepath.FromSlash(e.path))
	if err != nil || !fi.Mode().IsRegular() || (fi.Mode()&0o100 != 0) != (e.mode == modeExecutable) {
		return false, nil
	}
	return bytes.Equal(got, want), nil
}

// maxCompared bounds a file read to compare it.
const maxCompared = 64 << 20

// readSmall reads a regular file, inside root when root is not nil, up
// to maxCompared bytes; a larger one is an error.
func readSmall(root *os.Root, name string) ([]byte, error) {
	f, _, err := fsroot.OpenRegular(root, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCompared+1))
	if err == nil && len(data) > maxCompared {
		err = fmt.Errorf("%s is larger than %d MiB", name, maxCompared>>20)
	}
	return data, err
}
