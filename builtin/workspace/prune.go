package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/troupe-dev/troupe/agenttypes"
)

// Recovered is a workspace that Prune found left behind by a process
// that ended without closing it, and recorded.
type Recovered struct {
	Run   string
	Agent string
	// Changes are its changes since its base, as Close gives them; nil
	// for a workspace whose Open never finished, which held no work.
	Changes *agenttypes.Changes
}

// Prune finds the workspaces of providers that are gone (a killed
// process: its lock is free), commits everything in each to its branch,
// so that no partial work is lost, and removes it with git's own
// commands. Workspaces of live providers, this one's included, are left
// alone; so are durable workspaces, whatever became of the provider that
// opened them (their run's workflow has them, and only their Close or
// DiscardRun ends them); so is everything while another Prune runs. A
// workspace that cannot be recorded stays, and its error is in the
// joined error. Lock files that no workspace needs and nobody holds,
// which killed processes leave, are removed.
func (p *Provider) Prune(ctx context.Context) ([]Recovered, error) {
	guard, ok, err := tryLock(filepath.Join(p.dirs.root, "prune.lock"), true)
	if err != nil || !ok {
		return nil, err
	}
	defer guard.Close()
	recs, err := p.readRecords()
	errs := []error{err}
	byOwner := map[string][]record{}
	for _, rec := range recs {
		if !rec.Durable { // the run's workflow has it, not a process
			byOwner[rec.Owner] = append(byOwner[rec.Owner], rec)
		}
	}
	var out []Recovered
	for owner, recs := range byOwner {
		got, err := p.pruneOwner(ctx, owner, recs)
		out = append(out, got...)
		errs = append(errs, err)
	}
	errs = append(errs, p.pruneOwnerLocks(), p.pruneLocks())
	return out, errors.Join(errs...)
}

// pruneOwner recovers the workspaces of owner, if its lock is free.
func (p *Provider) pruneOwner(ctx context.Context, owner string, recs []record) ([]Recovered, error) {
	if owner == p.owner || !validName(owner) {
		return nil, nil
	}
	lock, free, err := tryLock(filepath.Join(p.dirs.owners, owner+".lock"), false)
	if err != nil || !free {
		return nil, err
	}
	if lock != nil {
		defer lock.Close()
	}
	var (
		out  []Recovered
		errs []error
	)
	for _, rec := range recs {
		ch, err := p.recover(ctx, rec)
		if err != nil {
			errs = append(errs, fmt.Errorf("workspace %s (agent %s): %w", rec.Tree, rec.Agent, err))
			continue
		}
		p.cfg.Logger.Info("recorded a workspace left behind", "agent", rec.Agent, "run", rec.Run, "branch", rec.Branch, "files", ch.Files())
		out = append(out, Recovered{Run: rec.Run, Agent: rec.Agent, Changes: ch})
	}
	if len(errs) == 0 && lock != nil {
		os.Remove(lock.Name())
	}
	return out, errors.Join(errs...)
}

// recover records and removes one workspace left behind.
func (p *Provider) recover(ctx context.Context, rec record) (*agenttypes.Changes, error) {
	w := &Workspace{p: p, rec: rec}
	if !rec.Opened {
		return nil, w.discard(ctx)
	}
	if rec.Closing == nil && exists(rec.Tree) {
		return w.finish(ctx)
	}
	return w.finishGone(ctx)
}

// pruneOwnerLocks removes the lock files of providers that are gone and
// whose workspaces are all recovered.
func (p *Provider) pruneOwnerLocks() error {
	recs, _ := p.readRecords()
	owners := map[string]bool{}
	for _, rec := range recs {
		owners[rec.Owner] = owners[rec.Owner] || !rec.Durable
	}
	entries, err := os.ReadDir(p.dirs.owners)
	if err != nil {
		return err
	}
	for _, e := range entries {
		owner, ok := strings.CutSuffix(e.Name(), ".lock")
		if !ok || owner == p.owner || owners[owner] || !validName(owner) {
			continue
		}
		lock, free, err := tryLock(filepath.Join(p.dirs.owners, e.Name()), false)
		if err == nil && free && lock != nil {
			os.Remove(lock.Name())
			lock.Close()
		}
	}
	return nil
}

// pruneLocks removes the lock files that no workspace's record needs
// and nobody holds: a workspace's, left by a process killed between
// removing its record and its lock, and an Open's, left by one killed
// while it held it.
func (p *Provider) pruneLocks() error {
	entries, err := os.ReadDir(p.dirs.locks)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".lock"); ok && validName(name) {
			errs = append(errs, p.removeFreeLock(filepath.Join(p.dirs.locks, e.Name())))
		}
	}
	return errors.Join(errs...)
}

// removeFreeLock removes the lock file at path unless someone holds it
// or the record of the workspace it is named after needs it. It is
// removed while held, as its holders remove it, so that a waiter for it
// takes the next one.
func (p *Provider) removeFreeLock(path string) error {
	lock, free, err := tryLock(path, false)
	if err != nil || !free || lock == nil {
		return err
	}
	defer lock.Close()
	if exists(p.recordPath(strings.TrimSuffix(filepath.Base(path), ".lock"))) {
		return nil
	}
	held, err := lock.Stat()
	if err != nil {
		return err
	}
	if named, err := os.Stat(path); err != nil || !os.SameFile(held, named) {
		return nil // removed, or made anew, meanwhile: not this one's to remove
	}
	return removeFile(path)
}

// validName says whether s is a name troupe made: no path in it.
func validName(s string) bool {
	return s != "" && !strings.ContainsAny(s, `/\`) && !strings.HasPrefix(s, ".")
}
