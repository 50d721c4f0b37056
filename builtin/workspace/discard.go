package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/gitsafe"
)

// troupeBranch is the form of every branch a workspace has:
// troupe/RUN/AGENT, with a "-N" suffix when the name was taken.
var troupeBranch = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^troupe/[A-Za-z0-9_-]+/[A-Za-z0-9_-]+$`) })

// Discard drops an ended agent's changes: it deletes their branch and
// their patch file. What is gone already is no error, so discarding
// twice is harmless. Only a branch of troupe's form (troupe/RUN/AGENT)
// is deleted, and only while it is where the changes left it and no
// worktree has it checked out: a branch that has moved may hold someone
// else's work, and is left, with an error that says how to delete it.
// Only a patch file in the state directory is removed. Nothing the
// repository configures runs.
func (p *Provider) Discard(ctx context.Context, ch *agenttypes.Changes) error {
	if ch == nil {
		return nil
	}
	var errs []error
	if ch.Branch != "" {
		errs = append(errs, p.discardBranch(ctx, ch))
	}
	errs = append(errs, p.removePatch(ch.Patch), p.removeKept(ch))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: discarding %s: %w", agenttypes.ErrWorkspace, ch.Branch, err)
	}
	return nil
}

// discardBranch deletes ch's branch if it is still at ch.Head.
func (p *Provider) discardBranch(ctx context.Context, ch *agenttypes.Changes) error {
	if !troupeBranch().MatchString(ch.Branch) {
		return fmt.Errorf("%q is not a branch troupe makes, and is left alone", ch.Branch)
	}
	repo, err := filepath.EvalSymlinks(ch.Repo)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // the repository is gone, and its branches with it
	}
	if err != nil {
		return err
	}
	rg, err := p.repoGit(ctx, repo, filepath.Dir(repo))
	if err != nil {
		return err
	}
	ref := "refs/heads/" + ch.Branch
	tip, err := resolve(ctx, rg, ref)
	if err != nil || tip == "" {
		return err
	}
	if tip != ch.Head {
		return fmt.Errorf("the branch %s has moved since the run ended (it is at %s, the run left it at %s) and may hold other work, so it is left; delete it with 'git branch -D %s' if it holds nothing you want", ch.Branch, short(tip), short(ch.Head), ch.Branch)
	}
	dir, err := checkedOutIn(ctx, rg, ref)
	if err != nil {
		return err
	}
	if dir != "" {
		return fmt.Errorf("the branch %s is checked out in %s, so it is left; check out another branch there, then discard again", ch.Branch, dir)
	}
	_, err = rg.Output(ctx, "update-ref", "--no-deref", "-d", ref, ch.Head)
	return err
}

// checkedOutIn returns the worktree that has ref checked out, if any.
func checkedOutIn(ctx context.Context, rg *gitsafe.Git, ref string) (string, error) {
	out, err := rg.Output(ctx, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return "", err
	}
	var tree string
	for field := range strings.SplitSeq(string(out), "\x00") {
		if dir, ok := strings.CutPrefix(field, "worktree "); ok {
			tree = dir
		}
		if field == "branch "+ref {
			return tree, nil
		}
	}
	return "", nil
}

func short(commit string) string { return commit[:min(len(commit), 12)] }

// removePatch removes a patch file of this state directory's; one
// elsewhere is not troupe's to remove here.
func (p *Provider) removePatch(path string) error {
	if path == "" {
		return nil
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil || dir != p.dirs.patches || !strings.HasSuffix(path, ".patch") {
		p.cfg.Logger.Info("a patch outside the state directory is left", "patch", path, "state", p.dirs.root)
		return nil
	}
	if err := os.Remove(filepath.Join(dir, filepath.Base(path))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// removeKept removes the file in which a closed durable workspace kept
// ch, if one did: its name is the branch's.
func (p *Provider) removeKept(ch *agenttypes.Changes) error {
	if !troupeBranch().MatchString(ch.Branch) {
		return nil
	}
	name := strings.Replace(strings.TrimPrefix(ch.Branch, "troupe/"), "/", "-", 1)
	k, err := p.readKept(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case k.Changes.Repo != ch.Repo || k.Changes.Branch != ch.Branch || k.Changes.Head != ch.Head:
		return nil
	}
	return removeFile(p.keptPath(name))
}

// DiscardRun removes the workspaces that agents of the run left open
// when their process was killed: each one's worktree, whatever it
// holds, its branch, its patch, its record and its locks. agent names
// one agent of the run; empty means every one. Workspaces of a process
// that is still running are left, and named in the error. Nothing left
// is no error.
//
// The run's durable workspaces go too, open or closed, whichever
// provider opened them: an open one unless a worker has it in hand now,
// a closed one with its changes, as Discard discards them, what it kept
// of them, and any lock file of it that a killed process left.
func (p *Provider) DiscardRun(ctx context.Context, run, agent string) error {
	guard, ok, err := tryLock(filepath.Join(p.dirs.root, "prune.lock"), true)
	if err != nil {
		return fmt.Errorf("%w: %w", agenttypes.ErrWorkspace, err)
	}
	if !ok {
		return fmt.Errorf("%w: another troupe is pruning workspaces now; try again in a moment", agenttypes.ErrWorkspace)
	}
	defer guard.Close()
	recs, err := p.readRecords()
	errs := []error{err}
	for _, rec := range recs {
		if rec.Run == run && (agent == "" || rec.Agent == agent) {
			errs = append(errs, p.discardLeft(ctx, rec))
		}
	}
	errs = append(errs, p.discardClosed(ctx, run, agent))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", agenttypes.ErrWorkspace, err)
	}
	return nil
}

// discardLeft removes one workspace whose process is gone, or a durable
// one that no worker has in hand.
func (p *Provider) discardLeft(ctx context.Context, rec record) error {
	lock, err := p.takeLeft(rec)
	if err != nil {
		return err
	}
	if lock != nil {
		defer lock.Close()
	}
	w := &Workspace{p: p, rec: rec}
	var errs []error
	if _, err := os.Stat(rec.Repo); errors.Is(err, fs.ErrNotExist) {
		// Its repository is gone: the worktree is a directory like any.
		if rel, err := filepath.Rel(p.dirs.trees, rec.Tree); err == nil && filepath.IsLocal(rel) {
			errs = append(errs, os.RemoveAll(rec.Tree))
		}
	} else if rg, err := p.repoGit(ctx, rec.Repo, rec.Top); err != nil {
		errs = append(errs, err)
	} else {
		if exists(rec.Tree) {
			errs = append(errs, w.removeTree(ctx, rg))
		}
		if troupeBranch().MatchString(rec.Branch) {
			_, err := rg.Output(ctx, "update-ref", "--no-deref", "-d", "refs/heads/"+rec.Branch)
			errs = append(errs, err)
		}
	}
	if err := os.Remove(p.patchPath(rec.Name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("workspace %s (agent %s): %w", rec.Tree, rec.Agent, err)
	}
	if err := p.removeRecord(rec.Name); err != nil {
		return err
	}
	return errors.Join(removeFile(p.workspaceLock(rec.Name)), p.removeFreeLock(p.openLock(rec.Run, rec.Agent)))
}

// takeLeft takes the lock that says nobody has rec's workspace in hand:
// its provider's, or, for a durable workspace, its own, which every
// process holds while it uses it. The lock is nil when its file is gone.
func (p *Provider) takeLeft(rec record) (*os.File, error) {
	if !validName(rec.Name) {
		return nil, fmt.Errorf("the record of agent %s's workspace names no valid workspace; remove the record %s", rec.Agent, p.recordPath(rec.Name))
	}
	path := p.workspaceLock(rec.Name)
	if !rec.Durable {
		if rec.Owner == p.owner || !validName(rec.Owner) {
			return nil, fmt.Errorf("the workspace of agent %s is in use by this process", rec.Agent)
		}
		path = filepath.Join(p.dirs.owners, rec.Owner+".lock")
	}
	lock, free, err := tryLock(path, false)
	switch {
	case err != nil:
		return nil, err
	case free:
		return lock, nil
	case rec.Durable:
		return nil, fmt.Errorf("the workspace %s of agent %s is in use by a worker now; discard the run once it has ended", rec.Tree, rec.Agent)
	}
	return nil, fmt.Errorf("the workspace %s of agent %s is in use by a troupe that is running; stop it first", rec.Tree, rec.Agent)
}

// discardClosed discards the changes of the run's closed durable
// workspaces, as Discard does, with what each kept of them.
func (p *Provider) discardClosed(ctx context.Context, run, agent string) error {
	prefix := runStem(run) + "-"
	entries, err := os.ReadDir(p.dirs.closed)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !strings.HasPrefix(name, prefix) {
			continue
		}
		k, err := p.readKept(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			errs = append(errs, err)
		case k.Record.Run == run && (agent == "" || k.Record.Agent == agent):
			errs = append(errs, p.Discard(ctx, k.Changes),
				// left if a process was killed as it closed or opened it
				p.removeFreeLock(p.workspaceLock(name)), p.removeFreeLock(p.openLock(run, k.Record.Agent)))
		}
	}
	return errors.Join(errs...)
}
