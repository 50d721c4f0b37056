package workspace

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/gitsafe"
)

const (
	// maxConflictFile bounds a conflicting file read for its hunks.
	maxConflictFile = 1 << 20
	// maxHunks bounds the hunks kept of one file.
	maxHunks = 16 << 10
)

var commitID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`) })

// Merge brings from, a finished child's changes, into the workspace with
// a three-way merge, without a work tree of git's own: the workspace's
// uncommitted state is first recorded on its branch, then git merges the
// two commits into a tree. A clean merge is committed on the branch and
// checked out in the workspace; a conflict leaves every file as it was
// and reports the conflicts. Changes already merged merge as nothing.
func (w *Workspace) Merge(ctx context.Context, from *agenttypes.Changes) (agenttypes.MergeResult, error) {
	if from == nil || from.Head == "" || from.Head == from.Base {
		return agenttypes.MergeResult{}, nil
	}
	if !commitID().MatchString(from.Head) {
		return agenttypes.MergeResult{}, fmt.Errorf("%w: %q is not a commit ID", agenttypes.ErrWorkspace, from.Head)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	release, err := w.hold(ctx)
	defer release()
	if err != nil {
		return agenttypes.MergeResult{}, fmt.Errorf("%w: %w", agenttypes.ErrWorkspace, err)
	}
	if w.ending() {
		return agenttypes.MergeResult{}, fmt.Errorf("%w: the workspace %s is closed", agenttypes.ErrWorkspace, w.rec.Name)
	}
	res, err := w.merge(ctx, from)
	if err != nil {
		return agenttypes.MergeResult{}, fmt.Errorf("%w: merging %s: %w", agenttypes.ErrWorkspace, from.Branch, err)
	}
	return res, nil
}

func (w *Workspace) merge(ctx context.Context, from *agenttypes.Changes) (agenttypes.MergeResult, error) {
	if repo, err := filepath.EvalSymlinks(from.Repo); err != nil || repo != w.rec.Repo {
		return agenttypes.MergeResult{}, fmt.Errorf("the changes are in the repository %s, and this workspace's is %s; only a child's changes merge", from.Repo, w.rec.Repo)
	}
	g, err := w.git(ctx)
	if err != nil {
		return agenttypes.MergeResult{}, err
	}
	if c, err := resolve(ctx, g, from.Head); err != nil || c != from.Head {
		return agenttypes.MergeResult{}, fmt.Errorf("commit %s is not in the repository (was its branch discarded?)", from.Head)
	}
	ours, err := w.settle(ctx, g)
	if err != nil {
		return agenttypes.MergeResult{}, err
	}
	// settle points the worktree's HEAD at its branch, on which a
	// conditional include (onbranch:) may depend: the checkout of the
	// merge lists the configuration as it is now.
	if g, err = w.git(ctx); err != nil {
		return agenttypes.MergeResult{}, err
	}
	if _, err := g.Output(ctx, "merge-base", "--is-ancestor", from.Head, ours); err == nil {
		return agenttypes.MergeResult{}, nil // merged before
	}
	out, err := g.Output(ctx, "merge-tree", "--write-tree", "-z", ours, from.Head)
	var gerr *gitsafe.Error
	switch {
	case errors.As(err, &gerr) && gerr.ExitCode() == 1:
		return conflicts(ctx, g, out)
	case err != nil:
		return agenttypes.MergeResult{}, err
	}
	return w.applyMerge(ctx, g, ours, from, strings.TrimSuffix(string(out), "\x00"))
}

// settle records the workspace's uncommitted state on its branch, its
// children's bases with it, and makes the worktree's index and HEAD
// match the branch, the files staying as they are. It returns the
// branch's tip.
func (w *Workspace) settle(ctx context.Context, g *gitsafe.Git) (string, error) {
	ours, index, err := w.commitWork(ctx, g, true, "troupe: the work of agent "+w.rec.Agent+" before a merge")
	if err != nil {
		if index != "" {
			os.Remove(index)
		}
		return "", fmt.Errorf("recording the workspace's state first: %w", err)
	}
	if err := os.Rename(index, filepath.Join(w.rec.GitDir, "index")); err != nil {
		os.Remove(index)
		return "", err
	}
	if _, err := g.Output(ctx, "symbolic-ref", "HEAD", "refs/heads/"+w.rec.Branch); err != nil {
		return "", err
	}
	return ours, nil
}

// applyMerge commits the merged tree on the branch and brings the
// worktree to it: git updates only the files the merge changed, and
// refuses, changing nothing, if one would overwrite a file it does not
// track.
func (w *Workspace) applyMerge(ctx context.Context, g *gitsafe.Git, ours string, from *agenttypes.Changes, tree string) (agenttypes.MergeResult, error) {
	tree, _, _ = strings.Cut(tree, "\x00")
	merged, err := commitTree(ctx, g, tree, []string{ours, from.Head}, "troupe: merge "+from.Branch+" into "+w.rec.Branch)
	if err != nil {
		return agenttypes.MergeResult{}, err
	}
	if _, err := g.Output(ctx, "read-tree", "-m", "-u", ours, merged); err != nil {
		return agenttypes.MergeResult{}, fmt.Errorf("bringing the merge into the workspace: %w", err)
	}
	if err := w.moveBranch(ctx, g, merged, ours); err != nil {
		return agenttypes.MergeResult{}, err
	}
	names, err := g.Output(ctx, "diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", ours, merged, "--")
	if err != nil {
		return agenttypes.MergeResult{}, err
	}
	var res agenttypes.MergeResult
	for name := range strings.SplitSeq(strings.TrimSuffix(string(names), "\x00"), "\x00") {
		if name != "" {
			res.Files = append(res.Files, name)
		}
	}
	return res, nil
}

// conflicts reads `merge-tree --write-tree -z` output of a merge with
// conflicts: the tree, the conflicted entries ("MODE OID STAGE\tPATH"),
// an empty entry, then messages (a path count, the paths, a type and
// the message). Each conflicting file gets its hunks, read from the
// merged tree, where they stand with conflict markers.
func conflicts(ctx context.Context, g *gitsafe.Git, out []byte) (agenttypes.MergeResult, error) {
	fields := strings.Split(string(out), "\x00")
	if len(fields) < 2 {
		return agenttypes.MergeResult{}, errors.New("git merge-tree printed no tree")
	}
	tree := fields[0]
	var paths []string
	i := 1
	for ; i < len(fields) && fields[i] != ""; i++ {
		if _, path, ok := strings.Cut(fields[i], "\t"); ok && !slices.Contains(paths, path) {
			paths = append(paths, path)
		}
	}
	reasons := conflictReasons(fields[min(i+1, len(fields)):])
	slices.Sort(paths)
	var res agenttypes.MergeResult
	for _, path := range paths {
		hunks, err := conflictHunks(ctx, g, tree, path)
		if err != nil {
			return agenttypes.MergeResult{}, err
		}
		reason := strings.Join(reasons[path], "; ")
		if reason == "" {
			reason = "CONFLICT: both sides changed " + path
		}
		res.Conflicts = append(res.Conflicts, agenttypes.Conflict{Path: path, Hunks: hunks, Reason: reason})
	}
	return res, nil
}

// conflictReasons maps each path to git's CONFLICT messages about it.
func conflictReasons(fields []string) map[string][]string {
	reasons := map[string][]string{}
	for i := 0; i < len(fields); {
		n, err := strconv.Atoi(fields[i])
		if err != nil || i+1+n+1 >= len(fields) {
			break
		}
		paths := fields[i+1 : i+1+n]
		kind, msg := fields[i+1+n], strings.TrimSpace(fields[i+2+n])
		if strings.HasPrefix(kind, "CONFLICT") {
			for _, p := range paths {
				if !slices.Contains(reasons[p], msg) {
					reasons[p] = append(reasons[p], msg)
				}
			}
		}
		i += n + 3
	}
	return reasons
}

// conflictHunks returns the regions of path in the merged tree that
// stand between conflict markers, markers included: none for a file
// that is missing, binary or too large.
func conflictHunks(ctx context.Context, g *gitsafe.Git, tree, path string) (string, error) {
	spec := tree + ":" + path
	size, err := g.Output(ctx, "cat-file", "-s", spec)
	if err != nil {
		return "", nil // not in the merged tree: a delete conflict
	}
	if n, err := strconv.Atoi(strings.TrimSpace(string(size))); err != nil || n > maxConflictFile {
		return "", nil
	}
	data, err := g.Output(ctx, "cat-file", "blob", spec)
	if err != nil {
		return "", err
	}
	if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
		return "", nil
	}
	var b strings.Builder
	in := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), maxConflictFile)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "<<<<<<<") {
			in = true
		}
		if in {
			if b.Len()+len(line) > maxHunks {
				b.WriteString("... (more conflicting lines cut)\n")
				break
			}
			b.WriteString(line + "\n")
		}
		if strings.HasPrefix(line, ">>>>>>>") {
			in = false
		}
	}
	return b.String(), nil
}
