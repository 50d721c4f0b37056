package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/troupe-dev/troupe/builtin/fsroot"
	"github.com/troupe-dev/troupe/builtin/gitsafe"
)

// maxIndexCopy bounds the index file copied to start a private index; a
// larger one is not copied, and the private index starts from HEAD.
const maxIndexCopy = 512 << 20

// stage records g's work tree in a tree object as `git add -A` stages
// it: tracked files as they are now, untracked files that no ignore rule
// covers, deleted files gone. It works in a private index, a copy of
// index (whose file stat data spares hashing unchanged files) or, with
// none, one read from HEAD; index itself is never written. It returns
// the tree and the private index, made in dir, which matches the tree;
// the caller removes it or installs it.
func stage(ctx context.Context, g *gitsafe.Git, index, dir string) (tree, private string, err error) {
	f, err := os.CreateTemp(dir, "troupe-index-*")
	if err != nil {
		return "", "", fmt.Errorf("making a private index: %w", err)
	}
	private = f.Name()
	copied := copyIndex(f, index)
	if err := f.Close(); err != nil {
		return "", private, err
	}
	gi := g.With("GIT_INDEX_FILE=" + private)
	if !copied {
		if err := readHead(ctx, gi, private); err != nil {
			return "", private, err
		}
	}
	if _, err = gi.Output(ctx, "add", "-A"); err != nil && copied {
		// An index this git cannot take as a copy: start from HEAD.
		if rerr := readHead(ctx, gi, private); rerr != nil {
			return "", private, errors.Join(err, rerr)
		}
		_, err = gi.Output(ctx, "add", "-A")
	}
	if err != nil {
		return "", private, fmt.Errorf("recording the files of %s: %w", g.WorkTree(), err)
	}
	out, err := gi.Output(ctx, "write-tree")
	if err != nil {
		return "", private, err
	}
	return strings.TrimSpace(string(out)), private, nil
}

// copyIndex copies the index file at path into f, and says whether it
// did: a missing, odd or very large index is not copied.
func copyIndex(f *os.File, path string) bool {
	if path == "" {
		return false
	}
	src, fi, err := fsroot.OpenRegular(nil, path)
	if err != nil {
		return false
	}
	defer src.Close()
	if fi.Size() > maxIndexCopy {
		return false
	}
	n, err := io.Copy(f, io.LimitReader(src, maxIndexCopy))
	return err == nil && n > 0
}

// readHead fills the private index with HEAD's tree, or leaves it empty
// when HEAD has no commit yet.
func readHead(ctx context.Context, gi *gitsafe.Git, private string) error {
	if err := os.Remove(private); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	head, err := resolve(ctx, gi, "HEAD")
	if err != nil {
		return err
	}
	if head == "" {
		_, err = gi.Output(ctx, "read-tree", "--empty")
	} else {
		_, err = gi.Output(ctx, "read-tree", head)
	}
	return err
}

// resolve returns the commit rev names, or "" when it names none.
func resolve(ctx context.Context, g *gitsafe.Git, rev string) (string, error) {
	out, err := g.Output(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	var gerr *gitsafe.Error
	if errors.As(err, &gerr) && gerr.ExitCode() == 1 {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// treeOf returns the tree of commit.
func treeOf(ctx context.Context, g *gitsafe.Git, commit string) (string, error) {
	out, err := g.Output(ctx, "rev-parse", "--verify", "--end-of-options", commit+"^{tree}")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// commitTree makes a commit of tree with parents, unsigned, as troupe.
func commitTree(ctx context.Context, g *gitsafe.Git, tree string, parents []string, msg string) (string, error) {
	args := []string{"commit-tree", "--no-gpg-sign", "-m", msg}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	out, err := g.Output(ctx, append(args, tree)...)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// snapshot makes the commit that holds g's work tree as it is now,
// HEAD plus what is not committed: HEAD itself when nothing is.
func snapshot(ctx context.Context, g *gitsafe.Git, index, tmp, msg string) (string, error) {
	tree, private, err := stage(ctx, g, index, tmp)
	if private != "" {
		defer os.Remove(private)
	}
	if err != nil {
		return "", err
	}
	head, err := resolve(ctx, g, "HEAD")
	if err != nil {
		return "", err
	}
	if head == "" {
		return commitTree(ctx, g, tree, nil, msg)
	}
	headTree, err := treeOf(ctx, g, head)
	if err != nil {
		return "", err
	}
	if headTree == tree {
		return head, nil
	}
	return commitTree(ctx, g, tree, []string{head}, msg)
}
