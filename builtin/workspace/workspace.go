package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/fsroot"
	"github.com/troupe-dev/troupe/builtin/gitsafe"
)

// Workspace is one agent's worktree on a branch of its own. It
// implements agenttypes.Workspace, and agenttypes.DurableWorkspace,
// whose Handle is empty unless it was opened durable.
type Workspace struct {
	p      *Provider
	policy agenttypes.RunPolicy

	// mu serialises what reads or records the work tree in this process;
	// hold does across processes. What mu guards of rec is Pending and
	// Closing only: the rest stays as Open made it.
	mu     sync.Mutex
	rec    record
	closed bool
	// kept are the changes a durable workspace's Close recorded, which a
	// Close again returns.
	kept *agenttypes.Changes
}

var _ agenttypes.Workspace = (*Workspace)(nil)

// Top is the worktree's top. Commands run in the workspace may write
// below it, never replace it.
func (w *Workspace) Top() string { return w.rec.Tree }

// Dir is the agent's directory in the workspace: the worktree's top, or
// the same subdirectory of it that the agent was asked to work in.
func (w *Workspace) Dir() string { return filepath.Join(w.rec.Tree, filepath.FromSlash(w.rec.Sub)) }

// checkDir makes sure the agent's directory is still a real directory
// inside the worktree: a command may have replaced it with a symlink to
// elsewhere, and what runs there, or is written there, would then land
// outside.
func (w *Workspace) checkDir() error {
	root, err := fsroot.OpenBeneath(w.rec.Tree, w.rec.Sub)
	if err != nil {
		return fmt.Errorf("the agent's directory in the workspace: %w", err)
	}
	return root.Close()
}

// Branch is the workspace's branch, troupe/RUN/AGENT.
func (w *Workspace) Branch() string { return w.rec.Branch }

// Base is the commit the workspace started from.
func (w *Workspace) Base() string { return w.rec.Base }

// runSetup runs the type's setup commands in the new workspace, each
// through Run, so that the run policy applies to them as to any
// command. A refused or failing command fails the Open.
func (w *Workspace) runSetup(ctx context.Context, setup []string) error {
	for _, line := range setup {
		args, err := agenttypes.SplitCommand(line)
		if err != nil {
			return fmt.Errorf("setup command %q: %w", line, err)
		}
		res, err := w.Run(ctx, agenttypes.Command{Args: args})
		if err != nil {
			return fmt.Errorf("setup command %q: %w", line, err)
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("setup command %q exited with status %d: %s", line, res.ExitCode, res.Output)
		}
	}
	return nil
}

// git returns a Git for the worktree, checked as it is now. Its git
// directory is the one recorded, whatever the worktree's .git says now.
func (w *Workspace) git(ctx context.Context) (*gitsafe.Git, error) {
	return gitsafe.New(ctx, w.rec.Tree, gitsafe.Options{
		GitDir: w.rec.GitDir, Within: []string{w.rec.Top}, Config: w.p.config(),
	})
}

// childSource is where a child of this workspace starts: its current
// state, uncommitted changes included, committed aside (the workspace's
// index, files and branch are untouched).
func (w *Workspace) childSource(ctx context.Context, dir, agent string) (source, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	release, err := w.hold(ctx)
	defer release()
	if err != nil {
		return source{}, err
	}
	if w.ending() {
		return source{}, errors.New("the parent's workspace is closed")
	}
	g, err := w.git(ctx)
	if err != nil {
		return source{}, err
	}
	tree, private, err := stage(ctx, g, filepath.Join(w.rec.GitDir, "index"), w.p.dirs.tmp)
	if private != "" {
		defer os.Remove(private)
	}
	if err != nil {
		return source{}, err
	}
	tip, tipTree, err := w.tip(ctx, g)
	if err != nil {
		return source{}, err
	}
	base := tip
	if tree != tipTree {
		if base, err = w.pendingBase(ctx, g, tree, tip, agent); err != nil {
			return source{}, err
		}
	}
	return source{repo: w.rec.Repo, top: w.rec.Top, sub: w.subFor(dir), base: base}, nil
}

// subFor is the directory a child asked for dir works in: the same
// place in its own worktree when dir is in this one, else this
// workspace's.
func (w *Workspace) subFor(dir string) string {
	if dir == "" {
		return w.rec.Sub
	}
	rel, err := filepath.Rel(w.rec.Tree, dir)
	switch {
	case err != nil:
		return w.rec.Sub
	case rel == ".":
		return ""
	case filepath.IsLocal(rel):
		return filepath.ToSlash(rel)
	}
	return w.rec.Sub
}

// pendingBase returns a commit of tree on tip, made for a child's base:
// the last one made, when it holds the same tree.
func (w *Workspace) pendingBase(ctx context.Context, g *gitsafe.Git, tree, tip, agent string) (string, error) {
	if n := len(w.rec.Pending); n > 0 {
		if last, err := treeOf(ctx, g, w.rec.Pending[n-1]); err == nil && last == tree {
			return w.rec.Pending[n-1], nil
		}
	}
	c, err := commitTree(ctx, g, tree, []string{tip}, "troupe: the state of agent "+w.rec.Agent+"'s workspace when "+agent+" started")
	if err != nil {
		return "", err
	}
	if err := w.setPending(append(w.rec.Pending, c)); err != nil {
		return "", err
	}
	return c, nil
}

// tip returns the commit at the head of the workspace's branch, and its
// tree. A branch that something in the workspace deleted counts as at
// the base.
func (w *Workspace) tip(ctx context.Context, g *gitsafe.Git) (commit, tree string, err error) {
	if commit, err = resolve(ctx, g, "refs/heads/"+w.rec.Branch); err != nil {
		return "", "", err
	}
	if commit == "" {
		commit = w.rec.Base
	}
	tree, err = treeOf(ctx, g, commit)
	return commit, tree, err
}

// commitWork records everything in the workspace, untracked files
// included and ignored ones not, on its branch: a commit when the work
// tree differs from the branch's tip, or, with withPending, when
// children's bases are pending. It returns the branch's tip after, and
// a private index in the worktree's git directory that matches it, for
// the caller to install or remove.
func (w *Workspace) commitWork(ctx context.Context, g *gitsafe.Git, withPending bool, msg string) (head, index string, err error) {
	tree, index, err := stage(ctx, g, filepath.Join(w.rec.GitDir, "index"), w.rec.GitDir)
	if err != nil {
		return "", index, err
	}
	tip, tipTree, err := w.tip(ctx, g)
	if err != nil {
		return "", index, err
	}
	if tree == tipTree && (!withPending || len(w.rec.Pending) == 0) {
		return tip, index, nil
	}
	c, err := commitTree(ctx, g, tree, append([]string{tip}, w.rec.Pending...), msg)
	if err != nil {
		return "", index, err
	}
	if err := w.moveBranch(ctx, g, c, tip); err != nil {
		return "", index, err
	}
	if len(w.rec.Pending) > 0 {
		err = w.setPending(nil)
	}
	return c, index, err
}

// setPending records the children's bases pending, in the record, the
// one place every process that has the workspace open reads them.
func (w *Workspace) setPending(pending []string) error {
	rec := w.rec
	rec.Pending = pending
	if err := w.p.saveRecord(rec); err != nil {
		return fmt.Errorf("recording the workspace's children's bases: %w", err)
	}
	w.rec.Pending = pending // only: Run reads the rest without w.mu
	return nil
}

// moveBranch points the workspace's branch at to, from from.
func (w *Workspace) moveBranch(ctx context.Context, g *gitsafe.Git, to, from string) error {
	ref := "refs/heads/" + w.rec.Branch
	old, err := resolve(ctx, g, ref)
	if err != nil {
		return err
	}
	if old == "" {
		_, err = g.Output(ctx, "update-ref", "--no-deref", ref, to, "")
	} else {
		_, err = g.Output(ctx, "update-ref", "--no-deref", ref, to, from)
	}
	if err != nil {
		return fmt.Errorf("moving the workspace's branch %s: %w", w.rec.Branch, err)
	}
	return nil
}

// Close records everything in the workspace on its branch (a commit
// only when something changed), writes the changes since its base as a
// patch, and removes the worktree, which it does only once the work is
// on the branch. On an error before that, the worktree stays as it is;
// so it does when the workspace holds git repositories made in it,
// whose files no branch holds (an error wrapping ErrNestedRepository,
// with the changes). A durable workspace closed already, in this
// process or another, returns the changes it recorded then.
func (w *Workspace) Close(ctx context.Context) (*agenttypes.Changes, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	release, err := w.hold(ctx)
	defer release()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", agenttypes.ErrWorkspace, err)
	}
	if w.closed && w.kept != nil {
		return w.kept, nil
	}
	if w.closed {
		return nil, fmt.Errorf("%w: the workspace %s is closed already", agenttypes.ErrWorkspace, w.rec.Name)
	}
	var ch *agenttypes.Changes
	if w.rec.Closing != nil || w.rec.Durable && !exists(w.rec.Tree) {
		ch, err = w.finishGone(ctx) // a Close before was killed as it removed the worktree
	} else {
		ch, err = w.finish(ctx)
	}
	if err != nil {
		return ch, fmt.Errorf("%w: %w", agenttypes.ErrWorkspace, err)
	}
	return ch, nil
}

// finish is Close, and Prune's recovery of a workspace left behind.
func (w *Workspace) finish(ctx context.Context) (*agenttypes.Changes, error) {
	ch, err := w.recordClose(ctx)
	if err != nil {
		return ch, err
	}
	return w.removeAndEnd(ctx, ch)
}

// recordClose records everything in the workspace on its branch, and
// then that the workspace is closing, and returns the changes: what
// Close does before it removes the worktree. It refuses, with the
// changes, a workspace that holds nested repositories, whose files the
// branch does not hold.
func (w *Workspace) recordClose(ctx context.Context) (*agenttypes.Changes, error) {
	g, err := w.git(ctx)
	if err != nil {
		return nil, fmt.Errorf("recording the work in %s: %w", w.rec.Tree, err)
	}
	head, index, err := w.commitWork(ctx, g, false, "troupe: the work of agent "+w.rec.Agent)
	var (
		left      []string
		leftCount int
	)
	if err == nil {
		left, leftCount, err = ignored(ctx, g, index)
	}
	if index != "" {
		os.Remove(index)
	}
	if err != nil {
		return nil, fmt.Errorf("recording the work in %s: %w", w.rec.Tree, err)
	}
	ch, err := w.changes(ctx, g, head)
	if err != nil {
		return nil, err
	}
	ch.Ignored, ch.IgnoredCount = left, leftCount
	nested, err := w.nestedRepos(ctx, g, head)
	if err == nil && len(nested) > 0 {
		err = w.nestedError(nested)
	}
	if err != nil {
		return ch, err
	}
	return ch, w.markClosing(closing{Head: head, Ignored: left, IgnoredCount: leftCount})
}

// markClosing saves in the record that the work is on the branch, at
// mark.Head, and that only the worktree's removal is left.
func (w *Workspace) markClosing(mark closing) error {
	rec := w.rec
	rec.Closing = &mark
	if err := w.p.saveRecord(rec); err != nil {
		return fmt.Errorf("the work is on branch %s, but recording that the workspace is closing failed: %w", w.rec.Branch, err)
	}
	w.rec.Closing = &mark
	return nil
}

// finishGone is finish for a workspace whose worktree is gone, or is
// being removed (a Close before marked it closing): what its branch
// holds is all there is, and what is left of the worktree goes.
func (w *Workspace) finishGone(ctx context.Context) (*agenttypes.Changes, error) {
	rg, err := w.p.repoGit(ctx, w.rec.Repo, w.rec.Top)
	if err != nil {
		return nil, err
	}
	mark := w.rec.Closing
	if mark == nil {
		mark = &closing{}
		if mark.Head, _, err = w.tip(ctx, rg); err != nil {
			return nil, err
		}
	}
	ch, err := w.changes(ctx, rg, mark.Head)
	if err != nil {
		return nil, err
	}
	ch.Ignored, ch.IgnoredCount = mark.Ignored, mark.IgnoredCount
	return w.removeAndEnd(ctx, ch)
}

// ending says whether the workspace is closed or closing: nothing but a
// Close may touch it.
func (w *Workspace) ending() bool { return w.closed || w.rec.Closing != nil }

// removeAndEnd removes the worktree of a workspace whose work is on its
// branch, as ch describes it, or prunes what git keeps of one gone
// already; deletes the branch if it holds nothing; and ends the
// workspace.
func (w *Workspace) removeAndEnd(ctx context.Context, ch *agenttypes.Changes) (*agenttypes.Changes, error) {
	w.closed = true
	rg, err := w.p.repoGit(ctx, w.rec.Repo, w.rec.Top)
	if err == nil {
		if exists(w.rec.Tree) {
			err = w.removeTree(ctx, rg)
		} else {
			var release func()
			if release, err = w.p.worktreesLock(ctx, rg.CommonDir()); err == nil {
				_, err = rg.Output(ctx, "worktree", "prune")
				release()
			}
		}
	}
	if err != nil {
		return ch, fmt.Errorf("the work is on branch %s, but removing its worktree %s failed: %w", w.rec.Branch, w.rec.Tree, err)
	}
	w.dropEmptyBranch(ctx, rg, ch)
	return ch, w.end(ch)
}

// dropEmptyBranch deletes the branch of a workspace that changed
// nothing: there is nothing to review, apply or merge, and the branch
// would only be clutter among the user's. A failure leaves it for
// discard.
func (w *Workspace) dropEmptyBranch(ctx context.Context, rg *gitsafe.Git, ch *agenttypes.Changes) {
	if !ch.Empty() {
		return
	}
	if tip, err := resolve(ctx, rg, "refs/heads/"+w.rec.Branch); err == nil && tip == "" {
		return // a Close before deleted it
	}
	if _, err := rg.Output(ctx, "update-ref", "--no-deref", "-d", "refs/heads/"+w.rec.Branch, ch.Head); err != nil {
		w.p.cfg.Logger.Warn("could not delete the branch of a workspace that changed nothing", "branch", w.rec.Branch, "err", err)
	}
}

// end removes the record of a workspace whose work is on its branch and
// whose worktree is gone. A durable one keeps its changes first, for a
// Close again, in any process, to return. Its lock goes last, while the
// caller holds it, so that whoever waits for it finds the workspace
// closed.
func (w *Workspace) end(ch *agenttypes.Changes) error {
	if w.rec.Durable {
		if err := w.p.keep(kept{Record: w.rec, Changes: ch}); err != nil {
			return fmt.Errorf("the work is on branch %s, but keeping its changes for a Close again failed: %w", w.rec.Branch, err)
		}
		w.kept = ch
	}
	if err := w.p.removeRecord(w.rec.Name); err != nil {
		return err
	}
	return removeFile(w.p.workspaceLock(w.rec.Name))
}
