package gitsafe

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/troupe-dev/troupe/builtin/fsroot"
)

// How git is kept inside the root's own repository.
//
// Left to find its repository, git follows whatever the root's .git
// names: a .git file ("gitdir: /elsewhere/.git") or a symlink can name
// any repository, a commondir file can borrow another one's refs and
// objects, objects/info/alternates entries (chained up to five deep) add
// other object stores, and a symlinked entry of the git directory (a
// pack directory, an object fan-out directory, the config) reads
// whatever it points at. So New resolves the git directory itself,
// checks all of those against the root, and hands the result to git as
// GIT_DIR (with GIT_WORK_TREE pinned to the root), for the configuration
// listing and the call alike. The one thing outside the root it accepts
// is a genuine linked worktree: a .git file naming <main>/.git/worktrees/
// <name>, whose gitdir file names this root's .git back, with the common
// directory its commondir names; and a git directory the caller names
// (Options.GitDir: a worktree it made, a private repository), with its
// common directory.
//
// The check reads a few small files and lists the top of the git and
// common directories, objects, objects/info, objects/pack and info; it
// does not walk the loose objects or refs. Nothing is cached: each New
// checks the tree as it is.

const (
	// gitSmallFileMax bounds each file the check reads: the .git file,
	// gitdir, commondir and alternates.
	gitSmallFileMax = 4 << 10
	// gitAlternatesDepth is how deep chained alternates are checked, a
	// little beyond the five levels git follows.
	gitAlternatesDepth = 8
)

// repoCheck holds what one check has established.
type repoCheck struct {
	root string // the root, symlinks resolved
	// allowed are the directories git may read: the root, the caller's
	// extra directories and, for a linked worktree, its git and common
	// directories.
	allowed []string
}

// checkRepo returns the git and common directories of the repository
// whose work tree is root, symlinks resolved. It refuses a repository
// that would make git read outside the allowed directories (see above),
// and a root with no .git. A given gitDir is used instead of the root's
// .git, as a linked worktree's is: the caller made it or checked it, and
// its commondir may name a directory outside the root. within are more
// directories git may read.
func checkRepo(root, gitDir string, within []string) (string, string, error) {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", "", fmt.Errorf("resolving the root %s: %w", root, err)
	}
	c := &repoCheck{root: real, allowed: []string{real}}
	for _, w := range within {
		if r, err := filepath.EvalSymlinks(w); err == nil {
			c.allowed = append(c.allowed, r)
		}
	}
	worktree := gitDir != ""
	if worktree {
		gitDir, err = c.givenDir(gitDir)
	} else {
		gitDir, worktree, err = c.gitDir()
	}
	if err != nil {
		return "", "", err
	}
	if err := c.links(gitDir); err != nil {
		return "", "", err
	}
	common, err := c.commonDir(gitDir, worktree)
	if err != nil {
		return "", "", err
	}
	return gitDir, common, c.objects(gitDir, common)
}

// givenDir resolves a git directory the caller names.
func (c *repoCheck) givenDir(dir string) (string, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("resolving the git directory %s: %w", dir, err)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%w: the git directory %s is not a directory", ErrNotRepository, real)
	}
	c.allowed = append(c.allowed, real)
	return real, nil
}

// objects checks the directories below the git and common directories
// that git reads objects through, and the alternates they list.
func (c *repoCheck) objects(gitDir, common string) error {
	// Checked top-down, so that each directory listed is reached through
	// links already checked.
	var dirs []string
	if common != gitDir {
		dirs = append(dirs, common, filepath.Join(gitDir, "info"))
	}
	dirs = append(dirs, filepath.Join(common, "objects"), filepath.Join(common, "objects", "info"),
		filepath.Join(common, "objects", "pack"), filepath.Join(common, "info"))
	for _, d := range dirs {
		if err := c.links(d); err != nil {
			return err
		}
	}
	objects, err := filepath.EvalSymlinks(filepath.Join(common, "objects"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil // git says what is missing
	}
	if err != nil {
		return fmt.Errorf("resolving %s: %w", c.show(filepath.Join(common, "objects")), err)
	}
	return c.alternates(objects, 0, map[string]bool{})
}

// gitDir resolves the root's .git to a directory, and says whether it is
// an accepted linked worktree outside the root.
func (c *repoCheck) gitDir() (string, bool, error) {
	dotGit := filepath.Join(c.root, ".git")
	fi, err := os.Lstat(dotGit)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", false, fmt.Errorf("%w: the root has no .git; git runs only in a repository whose top is the root, never one above it", ErrNotRepository)
	case err != nil:
		return "", false, fmt.Errorf("reading the root's .git: %w", err)
	}
	target := dotGit
	if fi.Mode()&fs.ModeSymlink != 0 {
		if target, err = filepath.EvalSymlinks(dotGit); err != nil {
			return "", false, fmt.Errorf("the root's .git is a symlink that does not resolve (%w); make .git the repository itself", err)
		}
		if !c.within(target) {
			return "", false, fmt.Errorf("the root's .git is a symlink to %s, outside the root; %w: make .git the repository itself, or run the agent in that repository's work tree", target, ErrOutsideRoot)
		}
		if fi, err = os.Stat(target); err != nil {
			return "", false, fmt.Errorf("reading the root's .git: %w", err)
		}
	}
	switch {
	case fi.IsDir():
		return target, false, nil
	case !fi.Mode().IsRegular():
		return "", false, fmt.Errorf("the root's .git is a %s; it must be the repository's directory or a \"gitdir: PATH\" file", fsroot.Kind(fi.Mode()))
	}
	return c.gitFile(target)
}

// gitFile resolves a .git file, "gitdir: PATH", PATH relative to the
// root unless absolute.
func (c *repoCheck) gitFile(file string) (string, bool, error) {
	data, err := readGitSmallFile(file)
	if err != nil {
		return "", false, fmt.Errorf("reading the root's .git file: %w", err)
	}
	// As git reads it: the prefix, then the path to the end, without
	// trailing line ends.
	named, ok := strings.CutPrefix(strings.TrimRight(string(data), "\r\n"), "gitdir: ")
	if !ok || named == "" {
		return "", false, errors.New(`the root's .git file is not a "gitdir: PATH" line; fix or remove it`)
	}
	if !filepath.IsAbs(named) {
		named = filepath.Join(c.root, named)
	}
	dir, err := filepath.EvalSymlinks(named)
	if err != nil {
		return "", false, fmt.Errorf("the root's .git file points at %s, which does not resolve (%w); fix or remove it", named, err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", false, fmt.Errorf("the root's .git file points at %s, which is not a directory; fix or remove it", dir)
	}
	if c.within(dir) {
		return dir, false, nil
	}
	if !c.linkedWorktree(dir, file) {
		return "", false, fmt.Errorf("the root's .git file points at %s, outside the root, and that is not a linked worktree of this root (its gitdir file does not name this root's .git); %w: run the agent in that repository's own work tree instead", dir, ErrOutsideRoot)
	}
	c.allowed = append(c.allowed, dir)
	return dir, true, nil
}

// linkedWorktree says whether dir is the git directory of a linked
// worktree whose work tree is the root: its gitdir file, written by
// `git worktree add`, names dotGit. The file's content is compared, never
// shown.
func (c *repoCheck) linkedWorktree(dir, dotGit string) bool {
	data, err := readGitSmallFile(filepath.Join(dir, "gitdir"))
	if err != nil {
		return false
	}
	back := strings.TrimRight(string(data), " \t\r\n")
	if back == "" {
		return false
	}
	if !filepath.IsAbs(back) {
		back = filepath.Join(dir, back)
	}
	back, err = filepath.EvalSymlinks(back)
	if err != nil {
		return false
	}
	own, err := filepath.EvalSymlinks(dotGit)
	return err == nil && back == own
}

// commonDir returns the directory named by gitDir's commondir file (as
// git reads it: relative to gitDir unless absolute), or gitDir when there
// is none. Outside the root it is accepted only for a linked worktree.
func (c *repoCheck) commonDir(gitDir string, worktree bool) (string, error) {
	file := filepath.Join(gitDir, "commondir")
	if _, err := os.Lstat(file); errors.Is(err, fs.ErrNotExist) {
		return gitDir, nil
	}
	data, err := readGitSmallFile(file)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", c.show(file), err)
	}
	named := strings.TrimRight(string(data), "\r\n")
	if !filepath.IsAbs(named) {
		named = filepath.Join(gitDir, named)
	}
	dir, err := filepath.EvalSymlinks(named)
	if err != nil {
		return "", fmt.Errorf("%s names %s, which does not resolve (%w); fix or remove it", c.show(file), named, err)
	}
	switch {
	case c.within(dir):
	case worktree:
		c.allowed = append(c.allowed, dir)
	default:
		return "", fmt.Errorf("%s names %s as the common git directory, outside the root; %w: remove that file", c.show(file), dir, ErrOutsideRoot)
	}
	return dir, nil
}

// links refuses a symlink in dir that resolves outside the allowed
// directories. A missing dir, or one that is not a directory, is left to
// git.
func (c *repoCheck) links(dir string) error {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("listing %s: %w", c.show(dir), err)
	}
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink == 0 {
			continue
		}
		p := filepath.Join(dir, e.Name())
		target, err := filepath.EvalSymlinks(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // dangling: nothing for git to read
		case err != nil:
			return fmt.Errorf("%s is a symlink that does not resolve (%w); replace it with what it should hold", c.show(p), err)
		case !c.within(target):
			return fmt.Errorf("%s is a symlink to %s, outside the root; %w: replace it with a copy of what it points at", c.show(p), target, ErrOutsideRoot)
		}
	}
	return nil
}

// alternates checks objects/info/alternates of the object store objects
// (symlinks resolved), and the stores it names in turn: every entry must
// lie in the allowed directories.
func (c *repoCheck) alternates(objects string, depth int, seen map[string]bool) error {
	if depth > gitAlternatesDepth || seen[objects] {
		return nil
	}
	seen[objects] = true
	file := filepath.Join(objects, "info", "alternates")
	real, err := filepath.EvalSymlinks(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("resolving %s: %w", c.show(file), err)
	case !c.within(real):
		return fmt.Errorf("%s is a symlink to %s, outside the root; %w: remove it", c.show(file), real, ErrOutsideRoot)
	}
	data, err := readGitSmallFile(real)
	if err != nil {
		return fmt.Errorf("reading %s: %w", c.show(file), err)
	}
	for _, entry := range gitAlternateEntries(string(data)) {
		named := entry
		if !filepath.IsAbs(named) {
			named = filepath.Join(objects, named) // git: relative to the store's real path
		}
		named = filepath.Clean(named)
		store, err := filepath.EvalSymlinks(named)
		switch {
		case errors.Is(err, fs.ErrNotExist) && c.within(named):
			continue // git skips a store that does not exist
		case errors.Is(err, fs.ErrNotExist):
			store = named
		case err != nil:
			return fmt.Errorf("%s lists %s, which does not resolve (%w); remove that line", c.show(file), named, err)
		}
		if !c.within(store) {
			return fmt.Errorf("%s lists the object store %s, outside the root; %w, so borrowed objects are refused: make the repository self-contained (git repack -a -d, then delete that file)", c.show(file), store, ErrOutsideRoot)
		}
		if err := c.alternates(store, depth+1, seen); err != nil {
			return err
		}
	}
	return nil
}

// within says whether p (absolute, clean) lies in an allowed directory.
func (c *repoCheck) within(p string) bool {
	for _, dir := range c.allowed {
		if rel, err := filepath.Rel(dir, p); err == nil && (rel == "." || filepath.IsLocal(rel)) {
			return true
		}
	}
	return false
}

// show names p relative to the root when it is inside it.
func (c *repoCheck) show(p string) string {
	if rel, err := filepath.Rel(c.root, p); err == nil && filepath.IsLocal(rel) {
		return filepath.ToSlash(rel)
	}
	return p
}

// readGitSmallFile reads a regular file of at most gitSmallFileMax bytes;
// a named pipe or device in its place is refused without blocking.
func readGitSmallFile(p string) ([]byte, error) {
	f, _, err := fsroot.OpenRegular(nil, p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, gitSmallFileMax+1))
	if err != nil {
		return nil, err
	}
	if len(data) > gitSmallFileMax {
		return nil, fmt.Errorf("larger than %d KiB, more than a git metadata file holds", gitSmallFileMax>>10)
	}
	return data, nil
}

// gitAlternateEntries splits an alternates file as git does
// (parse_alt_odb_entry): one entry per line; a line starting with '#' is a
// comment; an entry starting with '"' is C-quoted when the quoting is
// well-formed (it may then span lines, and the one character after the
// closing quote is skipped, whatever it is), else taken literally; empty
// entries are dropped; a NUL ends the file.
func gitAlternateEntries(s string) []string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	var out []string
	for s != "" {
		entry, end := "", 0
		if s[0] == '#' {
			end = lineEnd(s)
		} else if v, n, ok := unquoteC(s); ok {
			entry, end = v, n
		} else {
			end = lineEnd(s)
			entry = s[:end]
		}
		if end < len(s) {
			end++
		}
		s = s[end:]
		if entry != "" {
			out = append(out, entry)
		}
	}
	return out
}

func lineEnd(s string) int {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return i
	}
	return len(s)
}

// unquoteC is git's unquote_c_style: s starts with '"'; it returns the
// unquoted text and the index just past the closing quote.
func unquoteC(s string) (string, int, bool) {
	if s == "" || s[0] != '"' {
		return "", 0, false
	}
	var b strings.Builder
	for i := 1; i < len(s); {
		c := s[i]
		i++
		switch c {
		case '"':
			return b.String(), i, true
		case '\\':
		default:
			b.WriteByte(c)
			continue
		}
		if i >= len(s) {
			return "", 0, false
		}
		c = s[i]
		i++
		switch c {
		case 'a':
			c = '\a'
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		case 'v':
			c = '\v'
		case '\\', '"':
		case '0', '1', '2', '3':
			if i+1 >= len(s) || !isOctal(s[i]) || !isOctal(s[i+1]) {
				return "", 0, false
			}
			c = (c-'0')<<6 | (s[i]-'0')<<3 | (s[i+1] - '0')
			i += 2
		default:
			return "", 0, false
		}
		b.WriteByte(c)
	}
	return "", 0, false
}

func isOctal(c byte) bool { return '0' <= c && c <= '7' }
