package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/gitsafe"
)

// ErrConflict is wrapped by Apply's error when the changes do not apply
// to the tree as it is; Applied.Conflicts says where, and nothing was
// written.
var ErrConflict = errors.New("the changes do not apply")

// ApplyOptions say how Apply applies.
type ApplyOptions struct {
	// Check works out what Apply would write, and its conflicts, and
	// writes nothing.
	Check bool
}

// Applied is what Apply did to the user's tree, or would do.
type Applied struct {
	// Dir is the tree the changes apply to: the top of the repository
	// the changes' Dir is in, or the plain directory itself.
	Dir string `json:"dir"`
	// Written are the files Apply wrote (added or changed), Removed
	// those it deleted: slash paths from Dir, sorted.
	Written []string `json:"written,omitempty"`
	Removed []string `json:"removed,omitempty"`
	// UpToDate is set when the tree holds the changes already, and Apply
	// had nothing to do.
	UpToDate bool `json:"up_to_date"`
	// Conflicts are why the changes do not apply; when there are any,
	// nothing was written.
	Conflicts []agenttypes.Conflict `json:"conflicts,omitempty"`
}

// Apply brings an agent's changes into the tree they were made from
// (ch.Dir's repository top, or the plain directory a snapshot was taken
// of) with a three-way merge: the base is ch.Base, theirs ch.Head, and
// ours the tree as it is now, HEAD with its staged, unstaged and
// untracked files, recorded without touching the user's index.
//
// A clean merge writes exactly the files it changes, and nothing else,
// into the work tree: never outside it, never through a symlink, never
// into .git. The user's index and HEAD stay as they are, so the changes
// show as unstaged modifications and untracked files, as after git stash
// apply without --index. A file whose content and mode the tree already
// has is left alone: changes applied before apply as nothing
// (UpToDate).
//
// When the changes do not apply (a file both the changes and the tree,
// committed or not, changed in ways that do not combine; an ignored file
// or a directory in the way; the tree changing while Apply looks at it)
// Apply writes nothing and returns an error wrapping ErrConflict, with
// the conflicts in Applied. Any other failure wraps
// agenttypes.ErrWorkspace. Nothing the repository configures runs.
func (p *Provider) Apply(ctx context.Context, ch *agenttypes.Changes, opts ApplyOptions) (Applied, error) {
	if ch.Empty() {
		return Applied{Dir: ch.Dir, UpToDate: ch != nil}, nil
	}
	t, err := p.applyTarget(ctx, ch)
	if err != nil {
		return Applied{}, fmt.Errorf("%w: applying %s: %w", agenttypes.ErrWorkspace, ch.Branch, err)
	}
	res, err := p.apply(ctx, t, ch, opts)
	res.Dir = t.dir
	switch {
	case len(res.Conflicts) > 0:
		return res, fmt.Errorf("%w to %s: %s", ErrConflict, t.dir, conflictSummary(res.Conflicts))
	case err != nil:
		return res, fmt.Errorf("%w: applying %s to %s: %w", agenttypes.ErrWorkspace, ch.Branch, t.dir, err)
	}
	return res, nil
}

// conflictSummary names the conflicting files, a few of them.
func conflictSummary(cs []agenttypes.Conflict) string {
	var names []string
	for i, c := range cs {
		if i == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(cs)-i))
			break
		}
		names = append(names, c.Path)
	}
	return "conflicts in " + strings.Join(names, ", ")
}

// applyTarget is the tree changes apply to, and git on it.
type applyTarget struct {
	g   *gitsafe.Git
	dir string // the tree's top
	// index is the user's index, copied to record the tree; "" for a
	// plain directory, whose private repository keeps none.
	index string
}

// applyTarget finds the tree ch applies to, and checks that it is the
// one ch was made from.
func (p *Provider) applyTarget(ctx context.Context, ch *agenttypes.Changes) (applyTarget, error) {
	if ch.Dir == "" {
		return applyTarget{}, errors.New("the changes name no directory they were made from, so there is nothing to apply them to; look at them with their patch instead")
	}
	if !commitID().MatchString(ch.Base) || !commitID().MatchString(ch.Head) {
		return applyTarget{}, fmt.Errorf("the changes' base %q or head %q is not a commit ID", ch.Base, ch.Head)
	}
	dir, err := filepath.EvalSymlinks(ch.Dir)
	if err != nil {
		return applyTarget{}, fmt.Errorf("the directory the changes were made from, %s, is gone: %w", ch.Dir, err)
	}
	if rel, err := filepath.Rel(p.dirs.root, dir); err == nil && (rel == "." || filepath.IsLocal(rel)) {
		return applyTarget{}, fmt.Errorf("%s is troupe's own (an agent's workspace): these are a child agent's changes, which its parent merges; apply the top-level run's changes instead", ch.Dir)
	}
	repo, err := filepath.EvalSymlinks(ch.Repo)
	if err != nil {
		return applyTarget{}, fmt.Errorf("the repository holding the changes, %s, is gone: %w", ch.Repo, err)
	}
	if filepath.Dir(repo) == p.dirs.snapshots {
		g, err := gitsafe.New(ctx, dir, gitsafe.Options{GitDir: repo, Config: p.config()})
		if err != nil {
			return applyTarget{}, err
		}
		return applyTarget{g: g, dir: g.WorkTree()}, p.checkSnapshotSize(ctx, g)
	}
	top, ok := findTop(dir)
	if !ok {
		return applyTarget{}, fmt.Errorf("%s is no longer in a git repository, and the changes are in %s", dir, repo)
	}
	g, err := gitsafe.New(ctx, top, gitsafe.Options{Config: p.config()})
	if err != nil {
		return applyTarget{}, err
	}
	if g.CommonDir() != repo {
		return applyTarget{}, fmt.Errorf("%s is in the repository %s, and the changes are in %s; apply them in a checkout of that one", top, g.CommonDir(), repo)
	}
	return applyTarget{g: g, dir: g.WorkTree(), index: filepath.Join(g.GitDir(), "index")}, nil
}

// apply works out the merge, checks the tree, and writes.
func (p *Provider) apply(ctx context.Context, t applyTarget, ch *agenttypes.Changes, opts ApplyOptions) (Applied, error) {
	if err := checkCommits(ctx, t.g, ch); err != nil {
		return Applied{}, err
	}
	ours, private, err := stage(ctx, t.g, t.index, p.dirs.tmp)
	if private != "" {
		defer os.Remove(private)
	}
	if err != nil {
		return Applied{}, err
	}
	plan, res, err := p.planApply(ctx, t, ch, ours)
	if err != nil || len(res.Conflicts) > 0 || res.UpToDate {
		return res, err
	}
	defer os.RemoveAll(plan.staged)
	if err := plan.checkDisk(t.dir); err != nil {
		return Applied{}, err
	}
	if res = plan.result(); len(res.Conflicts) > 0 || res.UpToDate || opts.Check {
		return res, nil
	}
	// The tree as it is now must still be the tree merged, in every path
	// written: the user may have saved a file meanwhile.
	now, err := restage(ctx, t.g, private, plan.tracked())
	if err != nil {
		return Applied{}, err
	}
	if err := plan.unchangedSince(ctx, t.g, t.dir, ours, now); err != nil {
		return Applied{}, err
	}
	return plan.result(), plan.carryOut(t.dir)
}

// checkCommits checks that ch's commits are in the repository, and that
// its branch is: changes whose branch was discarded are not applied.
func checkCommits(ctx context.Context, g *gitsafe.Git, ch *agenttypes.Changes) error {
	for _, c := range []string{ch.Base, ch.Head} {
		if got, err := resolve(ctx, g, c); err != nil || got != c {
			return fmt.Errorf("commit %s is not in the repository %s (was the run discarded?)", c, g.CommonDir())
		}
	}
	if ch.Branch == "" {
		return nil
	}
	tip, err := resolve(ctx, g, "refs/heads/"+ch.Branch)
	if err != nil {
		return err
	}
	if tip == "" {
		return fmt.Errorf("the branch %s is gone: the changes were discarded", ch.Branch)
	}
	return nil
}

// planApply merges the changes into ours, the tree as it is, and plans
// what to write: the files the merge changed, staged by git in a
// directory of troupe's with the conversions a checkout makes (line
// endings), and the files to remove.
func (p *Provider) planApply(ctx context.Context, t applyTarget, ch *agenttypes.Changes, ours string) (*applyPlan, Applied, error) {
	// ours on top of the base: their merge base is then the base itself,
	// whatever the user committed since (git merge-tree of this git takes
	// no --merge-base).
	oursCommit, err := commitTree(ctx, t.g, ours, []string{ch.Base}, "troupe: "+t.dir+" before applying "+ch.Branch)
	if err != nil {
		return nil, Applied{}, err
	}
	out, err := t.g.Output(ctx, "merge-tree", "--write-tree", "-z", oursCommit, ch.Head)
	var gerr *gitsafe.Error
	switch {
	case errors.As(err, &gerr) && gerr.ExitCode() == 1:
		res, err := conflicts(ctx, t.g, out)
		return nil, Applied{Conflicts: relabel(res.Conflicts, oursCommit, ch)}, err
	case err != nil:
		return nil, Applied{}, err
	}
	merged, _, _ := strings.Cut(string(out), "\x00")
	if merged == ours {
		return nil, Applied{UpToDate: true}, nil
	}
	plan, err := diffPlan(ctx, t.g, ours, merged)
	if err != nil {
		return nil, Applied{}, err
	}
	if plan.staged, err = os.MkdirTemp(p.dirs.tmp, "apply-*"); err != nil {
		return nil, Applied{}, err
	}
	if err := plan.stageFiles(ctx, t.g, p.dirs.tmp); err != nil {
		os.RemoveAll(plan.staged)
		return nil, Applied{}, err
	}
	return plan, Applied{}, nil
}

// relabel names the sides of conflict markers for a person: the tree as
// "yours", the changes by their branch, rather than by commit IDs.
func relabel(cs []agenttypes.Conflict, ours string, ch *agenttypes.Changes) []agenttypes.Conflict {
	r := strings.NewReplacer("<<<<<<< "+ours, "<<<<<<< yours", ">>>>>>> "+ch.Head, ">>>>>>> "+ch.Branch, "||||||| "+ch.Base, "||||||| base")
	for i := range cs {
		cs[i].Hunks = r.Replace(cs[i].Hunks)
	}
	return cs
}

// diffPlan lists what turns the tree ours into merged, with modes.
func diffPlan(ctx context.Context, g *gitsafe.Git, ours, merged string) (*applyPlan, error) {
	out, err := g.Output(ctx, "diff-tree", "-r", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", ours, merged, "--")
	if err != nil {
		return nil, err
	}
	plan := &applyPlan{}
	fields := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		// ":OLDMODE NEWMODE OLDOID NEWOID STATUS", then the path.
		meta := strings.Fields(strings.TrimPrefix(fields[i], ":"))
		path := fields[i+1]
		if len(meta) < 5 {
			return nil, fmt.Errorf("git diff-tree printed %q", fields[i])
		}
		if err := checkApplyPath(path); err != nil {
			return nil, err
		}
		oldMode, newMode := meta[0], meta[1]
		if oldMode == modeGitlink || newMode == modeGitlink {
			return nil, fmt.Errorf("the changes touch the submodule %s, which apply does not change; update it by hand", path)
		}
		if strings.HasPrefix(meta[4], "D") {
			plan.remove = append(plan.remove, path)
			continue
		}
		plan.write = append(plan.write, planEntry{path: path, mode: newMode, oid: meta[3], added: oldMode == "000000"})
	}
	slices.Sort(plan.remove)
	slices.SortFunc(plan.write, func(a, b planEntry) int { return strings.Compare(a.path, b.path) })
	return plan, nil
}

// Git's modes of tree entries.
const (
	modeGitlink    = "160000"
	modeSymlink    = "120000"
	modeExecutable = "100755"
)

// checkApplyPath refuses a path that could write outside the tree or
// into a git directory, however the tree that names it was made.
func checkApplyPath(path string) error {
	if path == "" || !filepath.IsLocal(filepath.FromSlash(path)) || strings.ContainsAny(path, "\\\x00") {
		return fmt.Errorf("the changes name the path %q, which is not inside the tree", path)
	}
	for part := range strings.SplitSeq(path, "/") {
		if strings.EqualFold(part, ".git") {
			return fmt.Errorf("the changes name the path %q, inside a .git, which apply never writes", path)
		}
	}
	return nil
}

// restage records the paths again in the private index that recorded
// the tree, and returns the tree it then holds.
func restage(ctx context.Context, g *gitsafe.Git, private string, paths []string) (string, error) {
	if len(paths) == 0 {
		return "", nil
	}
	gi := g.With("GIT_INDEX_FILE="+private, "GIT_LITERAL_PATHSPECS=1")
	var list bytes.Buffer
	for _, p := range paths {
		list.WriteString(p + "\x00")
	}
	if err := gi.Run(ctx, &list, nil, "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
		return "", fmt.Errorf("recording the files of %s again: %w", g.WorkTree(), err)
	}
	out, err := gi.Output(ctx, "write-tree")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// unchangedSince refuses to write when a path the plan touches differs
// between ours, the tree merged, and now, the tree recorded again in
// those paths ("" when none was in it), or when a file the plan adds is
// in the tree dir now.
func (plan *applyPlan) unchangedSince(ctx context.Context, g *gitsafe.Git, dir, ours, now string) error {
	var moved []string
	for _, e := range plan.write {
		// A directory there is one checkDisk found the plan empties.
		if fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(e.path))); e.added && err == nil && !fi.IsDir() {
			moved = append(moved, e.path)
		}
	}
	if now != "" && now != ours {
		out, err := g.Output(ctx, "diff-tree", "-r", "-z", "--name-only", "--no-renames", "--no-ext-diff", "--no-textconv", ours, now, "--")
		if err != nil {
			return err
		}
		touched := plan.paths()
		for name := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
			if _, ok := slices.BinarySearch(touched, name); ok {
				moved = append(moved, name)
			}
		}
	}
	if len(moved) > 0 {
		return fmt.Errorf("%s changed while the changes were being applied; nothing was written; apply again", strings.Join(moved, ", "))
	}
	return nil
}
