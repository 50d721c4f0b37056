package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/workspace"
	"github.com/troupe-dev/troupe/manager"
)

// workspaceProvider opens the workspaces' state directory for a command
// that applies or discards what runs changed.
func (a *app) workspaceProvider() (*workspace.Provider, error) {
	return workspace.New(workspace.Config{StateDir: a.workspacesDir(), Logger: a.logger()})
}

// applyRun is troupe runs apply ID: the run's changes into the tree it
// ran in, or why not.
func (a *app) applyRun(ctx context.Context, id string, asJSON bool) error {
	r, err := a.finishedRun(id)
	if err != nil {
		return err
	}
	if r.Changes.Empty() {
		if !terminalState(r.State) {
			return fmt.Errorf("run %s has not ended (it is %s), so it has no changes to apply yet", r.ID, r.State)
		}
		fmt.Fprintf(a.stderr, "run %s changed nothing; there is nothing to apply\n", r.ID)
		return nil
	}
	p, err := a.workspaceProvider()
	if err != nil {
		return err
	}
	defer p.Close()
	res, err := p.Apply(ctx, r.Changes, workspace.ApplyOptions{})
	if asJSON && (err == nil || errors.Is(err, workspace.ErrConflict)) {
		if jerr := writeJSON(a.stdout, res); jerr != nil {
			return jerr
		}
	}
	return a.reportApplied(r.ID, res, err)
}

// reportApplied says what applying run id's changes did: what it wrote,
// or, refused, the conflicts and what to do (exit 1).
func (a *app) reportApplied(id string, res workspace.Applied, err error) error {
	switch {
	case errors.Is(err, workspace.ErrConflict):
		printConflicts(a.stderr, id, res)
		return exitError{exitFailed}
	case err != nil:
		return err
	case res.UpToDate:
		fmt.Fprintf(a.stderr, "%s holds run %s's changes already; nothing to do\n", res.Dir, id)
		return nil
	}
	fmt.Fprintf(a.stderr, "applied run %s's changes to %s: %s written, %s removed\n", id, res.Dir,
		plural(len(res.Written), "file", "files"), plural(len(res.Removed), "file", "files"))
	if isGitTop(res.Dir) {
		fmt.Fprintln(a.stderr, "they are not staged: 'git status' and 'git diff' show them")
	}
	return nil
}

// printConflicts says why a run's changes did not apply, file by file,
// and what to do.
func printConflicts(w io.Writer, id string, res workspace.Applied) {
	fmt.Fprintf(w, "troupe: run %s's changes do not apply to %s; nothing was changed:\n", id, res.Dir)
	// Paths and hunks are what a model wrote: shown escaped, so that no
	// escape sequence reaches the terminal.
	for _, c := range res.Conflicts {
		fmt.Fprintf(w, "  %s: %s\n", shown(c.Path), shown(c.Reason))
		for line := range strings.SplitSeq(strings.TrimRight(c.Hunks, "\n"), "\n") {
			if line != "" {
				fmt.Fprintf(w, "    %s\n", shown(line))
			}
		}
	}
	files := "those files"
	if len(res.Conflicts) == 1 {
		files = "that file"
	}
	fmt.Fprintf(w, "commit, stash or undo your own changes to %s, or move aside what is in the way, and run 'troupe runs apply %s' again; 'troupe runs diff %s' shows the changes as a patch\n", files, id, id)
}

// shown is s with its control characters escaped, as copyShown writes
// them.
func shown(s string) string {
	var b strings.Builder
	_ = copyShown(&b, strings.NewReader(s))
	return b.String()
}

// isGitTop reports whether dir is the top of a git repository.
func isGitTop(dir string) bool { return fileExists(filepath.Join(dir, ".git")) }

// terminalState reports whether a run's state says it ended: completed,
// failed or cancelled, or interrupted by the end of its process.
func terminalState(state string) bool {
	s, err := manager.ParseState(state)
	return (err == nil && s.Terminal()) || state == stateInterrupted
}

// discardRun is troupe runs discard ID: the branches, patches and left
// workspaces of the run and of every run below it.
func (a *app) discardRun(ctx context.Context, id string) error {
	r, err := a.finishedRun(id)
	if err != nil {
		return err
	}
	if lockSupported && running(r.Transcript) {
		return fmt.Errorf("run %s's process is still running; discard the run once it has ended", r.ID)
	}
	family := familyOf(r)
	var branches []string
	changed := false
	for _, rec := range family {
		if rec.Changes != nil && rec.Changes.Branch != "" {
			branches = append(branches, rec.Changes.Branch)
		}
		changed = changed || !rec.Changes.Empty()
	}
	if len(branches) == 0 && !fileExists(a.workspacesDir()) {
		fmt.Fprintf(a.stderr, "run %s left no changes; there is nothing to discard\n", r.ID)
		return nil
	}
	p, err := a.workspaceProvider()
	if err != nil {
		return err
	}
	defer p.Close()
	var errs []error
	for _, rec := range family {
		errs = append(errs, p.Discard(ctx, rec.Changes), p.DiscardRun(ctx, transcriptRun(r.Transcript), rec.ID))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	switch {
	case len(branches) == 0 || !changed:
		// A workspace that changed nothing takes its branch with it.
		fmt.Fprintf(a.stderr, "run %s left no changes; there is nothing to discard\n", r.ID)
	default:
		fmt.Fprintf(a.stderr, "discarded run %s's changes: %s %s\n", r.ID, plural(len(branches), "branch", "branches"), strings.Join(branches, ", "))
	}
	return nil
}

// familyOf is the run r and every run below it, from r's transcript,
// which holds the events of every agent of its process.
func familyOf(r runRecord) []runRecord {
	recs, _ := inspectFile(r.Transcript)
	family := []runRecord{r}
	for i := 0; i < len(family); i++ {
		for _, c := range recs {
			if c.ParentID == family[i].ID && c.ID != family[i].ID {
				family = append(family, c)
			}
		}
	}
	return family
}

// transcriptRun is the ID of the process's run that wrote a transcript,
// which names its workspaces' branches: the transcript's file name.
func transcriptRun(path string) string {
	return strings.TrimSuffix(filepath.Base(path), ".jsonl")
}

// applyAfterRun is troupe run --apply: after a run that completed and
// changed files, their diffstat was shown; apply them, asking first on a
// terminal unless yes. Off a terminal without yes nothing is applied,
// and the command exits 1.
func (a *app) applyAfterRun(ctx context.Context, res manager.Result, dir string, yes bool, con *console, spaces *workspaces) error {
	ch := res.Changes
	if ch.Empty() {
		return nil
	}
	if !sameDir(ch.Dir, dir) {
		// Workers on Temporal made them in their own checkout.
		fmt.Fprint(a.stderr, diffstatLines(ch))
		fmt.Fprintf(a.stderr, "troupe: --apply: nothing was applied: the changes were made from %s, not %s; they are on branch %s of %s, to merge there ('troupe runs apply %s' applies them to %s where it can reach it)\n", ch.Dir, dir, ch.Branch, ch.Repo, res.ID, ch.Dir)
		return exitError{exitFailed}
	}
	if res.State != manager.Completed {
		fmt.Fprintf(a.stderr, "troupe: the run did not complete, so its changes are not applied; 'troupe runs apply %s' applies them if you want them\n", res.ID)
		return nil
	}
	fmt.Fprint(a.stderr, diffstatLines(ch))
	if !yes && con == nil {
		fmt.Fprintf(a.stderr, "troupe: --apply: nothing was applied, since there is no terminal to ask on; pass --yes to apply without asking, or apply later with 'troupe runs apply %s'\n", res.ID)
		return exitError{exitFailed}
	}
	p, err := spaces.get(ctx)
	if err != nil {
		return err
	}
	check, err := p.Apply(ctx, ch, workspace.ApplyOptions{Check: true})
	if err != nil || check.UpToDate {
		return a.reportApplied(res.ID, check, err)
	}
	if !yes {
		answer, err := con.ask(ctx, fmt.Sprintf("Apply these changes to %s? [y/N] ", check.Dir))
		if answer = strings.ToLower(strings.TrimSpace(answer)); err != nil || (answer != "y" && answer != "yes") {
			fmt.Fprintf(a.stderr, "not applied; 'troupe runs apply %s' applies them later\n", res.ID)
			return nil
		}
	}
	applied, err := p.Apply(ctx, ch, workspace.ApplyOptions{})
	return a.reportApplied(res.ID, applied, err)
}

// pruneRuns removes the transcripts older than retention, as
// manager.PruneTranscripts does, having first discarded what their runs
// left: branches, patches, and workspaces of runs that were killed. What
// cannot be discarded (a branch that moved since, say) is warned about
// and left.
func (a *app) pruneRuns(ctx context.Context, dir string, retention time.Duration, spaces *workspaces) error {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	cutoff := time.Now().Add(-retention)
	for _, e := range entries {
		if !e.Type().IsRegular() || filepath.Ext(e.Name()) != ".jsonl" {
			continue
		}
		if info, err := e.Info(); err == nil && info.ModTime().Before(cutoff) {
			a.discardTranscript(ctx, filepath.Join(dir, e.Name()), spaces)
		}
	}
	_, err = manager.PruneTranscripts(dir, retention)
	return err
}

// discardTranscript discards what the runs of one transcript left.
func (a *app) discardTranscript(ctx context.Context, path string, spaces *workspaces) {
	events, _ := manager.ReadTranscript(path)
	var changes []*agenttypes.Changes
	spawned := map[string]bool{}
	for _, e := range events {
		switch e.Kind {
		case manager.EventSpawned:
			spawned[e.AgentID] = true
		case manager.EventCompleted:
			delete(spawned, e.AgentID)
			if e.Changes != nil && e.Changes.Branch != "" {
				changes = append(changes, e.Changes)
			}
		}
	}
	// An agent spawned and never completed was killed: its workspace may
	// be left.
	if len(changes) == 0 && len(spawned) == 0 {
		return
	}
	p, err := spaces.get(ctx)
	if err != nil {
		a.logger().Warn("could not discard the changes of an old run", "transcript", path, "err", err)
		return
	}
	for _, ch := range changes {
		if err := p.Discard(ctx, ch); err != nil {
			a.logger().Warn("could not discard the changes of an old run", "transcript", path, "err", err)
		}
	}
	if len(spawned) > 0 {
		if err := p.DiscardRun(ctx, transcriptRun(path), ""); err != nil {
			a.logger().Warn("could not discard the workspaces of an old run", "transcript", path, "err", err)
		}
	}
}
