package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/fsroot"
	"github.com/troupe-dev/troupe/builtin/gitsafe"
)

const (
	// idLen is how much of a run's or an agent's ID names its branch.
	idLen = 8
	// maxNameTries bounds the search for a free name.
	maxNameTries = 100
)

// shortID makes id a short ref-name component: letters, digits, '-' and
// '_' only, at most idLen of them, never empty.
func shortID(id string) string {
	var b strings.Builder
	for _, r := range id {
		if b.Len() == idLen {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	s := strings.TrimRight(b.String(), "-")
	if s == "" {
		return "x"
	}
	return s
}

// create makes the workspace: a unique name claimed by its record, then
// a worktree on a fresh branch at src.base. Nothing is left behind on
// failure.
func (p *Provider) create(ctx context.Context, req agenttypes.WorkspaceRequest, src source) (*Workspace, error) {
	rg, err := p.repoGit(ctx, src.repo, src.top)
	if err != nil {
		return nil, err
	}
	rec := record{Owner: p.owner, Run: req.Run, Agent: req.Agent, Dir: src.from, Sub: src.sub, Repo: rg.CommonDir(), Top: src.top, Base: src.base,
		Durable: req.Durable, Policy: req.Policy}
	if err := p.claim(ctx, rg, &rec); err != nil {
		return nil, err
	}
	w := &Workspace{p: p, rec: rec, policy: req.Policy}
	fail := func(err error) (*Workspace, error) {
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		if derr := w.discard(cctx); derr != nil {
			err = errors.Join(err, derr)
		}
		return nil, err
	}
	f, err := os.OpenFile(p.workspaceLock(rec.Name), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fail(fmt.Errorf("making the workspace's lock: %w", err))
	}
	f.Close()
	// Not checked out by git worktree add, which would do it in a git of
	// its own started in the new worktree's context (its branch, its git
	// directory), where a conditional include that the listing made here
	// did not see could name a filter: checkout does it in that context,
	// listed there.
	release, err := p.worktreesLock(ctx, rg.CommonDir())
	if err != nil {
		return fail(err)
	}
	_, err = rg.Output(ctx, "worktree", "add", "-q", "--no-checkout", "-b", rec.Branch, rec.Tree, rec.Base)
	release()
	if err != nil {
		return fail(fmt.Errorf("making the worktree: %w", err))
	}
	if w.rec.GitDir, err = worktreeGitDir(rec.Tree, rg.CommonDir()); err != nil {
		return fail(err)
	}
	w.rec.Opened = true
	if err := p.saveRecord(w.rec); err != nil {
		return fail(fmt.Errorf("recording the workspace: %w", err))
	}
	if err := w.checkout(ctx); err != nil {
		return fail(err)
	}
	if err := w.makeDir(); err != nil {
		return fail(err)
	}
	return w, nil
}

// checkout fills the new worktree with its branch's files, through a Git
// made for the worktree itself, so that the configuration git checks out
// with is the one listed and neutralised.
func (w *Workspace) checkout(ctx context.Context) error {
	g, err := w.git(ctx)
	if err != nil {
		return fmt.Errorf("checking out the workspace: %w", err)
	}
	if _, err := g.Output(ctx, "read-tree", "--reset", "-u", "HEAD"); err != nil {
		return fmt.Errorf("checking out the workspace: %w", err)
	}
	return nil
}

// makeDir makes the agent's directory, which may hold nothing git keeps
// (it is empty, or all its files are ignored), inside the worktree and
// only there: what the checkout put on its path (a symlink, from a
// parent's workspace where a command made one) is never followed.
func (w *Workspace) makeDir() error {
	if err := w.checkDir(); !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	root, err := os.OpenRoot(w.rec.Tree)
	if err != nil {
		return err
	}
	err = root.MkdirAll(filepath.FromSlash(w.rec.Sub), 0o755)
	if cerr := root.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("making the agent's directory %s in the workspace: %w", w.rec.Sub, err)
	}
	return w.checkDir()
}

// claim finds the workspace a free name (its branch, worktree, record and
// patch all unused) and writes its record.
func (p *Provider) claim(ctx context.Context, rg *gitsafe.Git, rec *record) error {
	stem, branchStem := nameStems(rec.Run, rec.Agent)
	for i := 1; i <= maxNameTries; i++ {
		suffix := ""
		if i > 1 {
			suffix = "-" + strconv.Itoa(i)
		}
		rec.Name, rec.Branch = stem+suffix, branchStem+suffix
		rec.Tree = filepath.Join(p.dirs.trees, rec.Name)
		if exists(rec.Tree) || exists(p.patchPath(rec.Name)) || exists(p.keptPath(rec.Name)) || exists(p.workspaceLock(rec.Name)) {
			continue
		}
		taken, err := resolve(ctx, rg, "refs/heads/"+rec.Branch)
		if err != nil {
			return err
		}
		if taken != "" {
			continue
		}
		err = p.claimRecord(*rec)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return err
	}
	return fmt.Errorf("no free workspace name for %s after %d tries; prune old runs' branches (troupe runs discard)", branchStem, maxNameTries)
}

// nameStems are the names of run's agent's workspace and branch, before
// claim's "-N" suffix.
func nameStems(run, agent string) (name, branch string) {
	return runStem(run) + "-" + shortID(agent), "troupe/" + runStem(run) + "/" + shortID(agent)
}

// runStem is the part of its workspaces' names that names run.
func runStem(run string) string {
	if run == "" {
		run = "run"
	}
	return shortID(run)
}

func (p *Provider) patchPath(name string) string {
	return filepath.Join(p.dirs.patches, name+".patch")
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// worktreeGitDir reads the .git file git just wrote in the worktree tree
// and checks that it names a worktree of the repository common.
func worktreeGitDir(tree, common string) (string, error) {
	dir, err := readDotGit(tree)
	if err != nil {
		return "", fmt.Errorf("reading the new worktree's .git: %w", err)
	}
	if filepath.Dir(dir) != filepath.Join(common, "worktrees") {
		return "", fmt.Errorf("the new worktree's .git names %s, not a worktree of %s", dir, common)
	}
	return dir, nil
}

// discard undoes a workspace that did not finish opening: its worktree,
// its branch while it is still at the base, and its record.
func (w *Workspace) discard(ctx context.Context) error {
	rg, err := w.p.repoGit(ctx, w.rec.Repo, w.rec.Top)
	if err != nil {
		return err
	}
	var errs []error
	if exists(w.rec.Tree) {
		errs = append(errs, w.removeTree(ctx, rg))
	}
	if tip, err := resolve(ctx, rg, "refs/heads/"+w.rec.Branch); err != nil {
		errs = append(errs, err)
	} else if tip == w.rec.Base {
		_, err := rg.Output(ctx, "update-ref", "-d", "refs/heads/"+w.rec.Branch, w.rec.Base)
		errs = append(errs, err)
	}
	errs = append(errs, w.p.removeRecord(w.rec.Name), removeFile(w.p.workspaceLock(w.rec.Name)))
	return errors.Join(errs...)
}

// removeFile removes the file at path; one gone already is no error.
func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// removeTree removes the worktree with git's own command, which also
// drops its administrative files; when git refuses (a worktree holding
// a submodule, say), the directory is removed and git prunes what is
// left. The caller has recorded everything worth keeping.
func (w *Workspace) removeTree(ctx context.Context, rg *gitsafe.Git) error {
	w.restoreDotGit()
	release, err := w.p.worktreesLock(ctx, rg.CommonDir())
	if err != nil {
		return err
	}
	defer release()
	_, err = rg.Output(ctx, "worktree", "remove", "--force", "--force", w.rec.Tree)
	if err == nil || !exists(w.rec.Tree) {
		return err
	}
	w.p.cfg.Logger.Warn("git would not remove a workspace; removing its directory and pruning", "dir", w.rec.Tree, "err", err)
	if rerr := os.RemoveAll(w.rec.Tree); rerr != nil {
		return fmt.Errorf("removing the workspace %s: %w", w.rec.Tree, rerr)
	}
	_, err = rg.Output(ctx, "worktree", "prune")
	return err
}

// restoreDotGit puts back the worktree's .git file, which git needs to
// remove the worktree, if what runs in the workspace changed it.
func (w *Workspace) restoreDotGit() {
	if w.rec.GitDir == "" {
		return
	}
	if dir, err := readDotGit(w.rec.Tree); err == nil && dir == w.rec.GitDir {
		return
	}
	dotGit := filepath.Join(w.rec.Tree, ".git")
	if err := os.RemoveAll(dotGit); err != nil {
		return
	}
	_ = os.WriteFile(dotGit, []byte("gitdir: "+w.rec.GitDir+"\n"), 0o644)
}

// readDotGit returns the directory a worktree's .git file names,
// symlinks resolved.
func readDotGit(tree string) (string, error) {
	f, _, err := fsroot.OpenRegular(nil, filepath.Join(tree, ".git"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 4<<10))
	if err != nil {
		return "", err
	}
	named, ok := strings.CutPrefix(strings.TrimRight(string(data), "\r\n"), "gitdir: ")
	if !ok {
		return "", errors.New(`not a "gitdir: PATH" file`)
	}
	return filepath.EvalSymlinks(named)
}

// worktreesLock takes the lock that git's worktree commands on the
// repository whose common directory is common take in turn, in every
// process on the state directory: git worktree add reads the
// administrative files of every other worktree, and fails on one that
// another process is making or removing at that moment.
func (p *Provider) worktreesLock(ctx context.Context, common string) (release func(), err error) {
	sum := sha256.Sum256([]byte(common))
	f, err := waitLock(ctx, filepath.Join(p.dirs.locks, "repo-"+hex.EncodeToString(sum[:16])+".lock"), true)
	if err != nil {
		return nil, fmt.Errorf("waiting for another git worktree command on %s: %w", common, err)
	}
	return func() {
		os.Remove(f.Name()) // while held: a waiter then locks a new file
		f.Close()
	}, nil
}
