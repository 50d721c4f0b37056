package workspace

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/gitsafe"
)

// source is where a new workspace starts from.
type source struct {
	repo string // the common git directory that will hold its branch
	top  string // the project's directory: the repository's top, or the plain directory
	sub  string // the agent's directory inside the top, slash form, "" for the top
	base string // the commit it starts from
	// from is the directory it is made from, which its changes apply
	// to: the user's, or the parent's workspace's.
	from string
}

// source finds where the workspace req asks for starts: its parent's
// workspace as it is now, else the repository req.Dir is in as it is
// now, else a snapshot of req.Dir.
func (p *Provider) source(ctx context.Context, req agenttypes.WorkspaceRequest) (source, error) {
	if req.Parent != nil {
		pw, ok := req.Parent.(*Workspace)
		if !ok {
			return source{}, fmt.Errorf("the parent's workspace is a %T, not one this package made, so the new one cannot start from it; give the manager one Workspaces for the whole tree", req.Parent)
		}
		src, err := pw.childSource(ctx, req.Dir, "agent "+req.Agent)
		src.from = pw.Dir()
		return src, err
	}
	if req.Dir == "" {
		return source{}, errors.New("the request names no directory to start from")
	}
	dir, err := filepath.Abs(req.Dir)
	if err == nil {
		dir, err = filepath.EvalSymlinks(dir)
	}
	if err != nil {
		return source{}, fmt.Errorf("directory %s: %w", req.Dir, err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return source{}, fmt.Errorf("%s is not a directory; pass the directory to work in", req.Dir)
	}
	top, repo := findTop(dir)
	if !repo {
		top = dir
	}
	if rel, err := filepath.Rel(top, p.dirs.root); err == nil && (rel == "." || filepath.IsLocal(rel)) {
		return source{}, fmt.Errorf("the state directory %s is inside the project %s, and workspaces never live in the user's tree; choose a state directory outside it", p.dirs.root, top)
	}
	var src source
	if repo {
		src, err = p.repoSource(ctx, top, dir, req.Agent)
	} else {
		src, err = p.plainSource(ctx, dir, req.Agent)
	}
	src.from = dir
	return src, err
}

// findTop finds the top of the git repository dir is in: the nearest
// directory, dir or above, that holds a .git.
func findTop(dir string) (string, bool) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d, true
		}
		if filepath.Dir(d) == d {
			return "", false
		}
	}
}

// repoSource snapshots the repository at top: HEAD plus its staged,
// unstaged and untracked changes, never its ignored files, committed on
// HEAD (HEAD itself when nothing is uncommitted) without touching the
// user's index or files.
func (p *Provider) repoSource(ctx context.Context, top, dir, agent string) (source, error) {
	g, err := gitsafe.New(ctx, top, gitsafe.Options{Config: p.config()})
	if err != nil {
		return source{}, err
	}
	base, err := snapshot(ctx, g, filepath.Join(g.GitDir(), "index"), p.dirs.tmp,
		"troupe: the uncommitted state of "+g.WorkTree()+" when agent "+agent+" started")
	if err != nil {
		return source{}, err
	}
	sub, err := filepath.Rel(g.WorkTree(), dir)
	if err != nil || !filepath.IsLocal(sub) {
		sub = ""
	}
	return source{repo: g.CommonDir(), top: g.WorkTree(), sub: filepath.ToSlash(sub), base: base}, nil
}

// plainSource snapshots a directory that is not in a git repository
// into a private repository of its own under the state directory; the
// directory itself gains no .git. Its .gitignore files are honoured.
func (p *Provider) plainSource(ctx context.Context, dir, agent string) (source, error) {
	sum := sha256.Sum256([]byte(dir))
	gitDir := filepath.Join(p.dirs.snapshots, hex.EncodeToString(sum[:8])+".git")
	if err := p.initPrivate(ctx, gitDir); err != nil {
		return source{}, err
	}
	g, err := gitsafe.New(ctx, dir, gitsafe.Options{GitDir: gitDir, Config: p.config()})
	if err != nil {
		return source{}, err
	}
	if err := p.checkSnapshotSize(ctx, g); err != nil {
		return source{}, err
	}
	base, err := snapshot(ctx, g, "", p.dirs.tmp, "troupe: "+dir+" when agent "+agent+" started")
	if err != nil {
		return source{}, err
	}
	return source{repo: g.CommonDir(), top: dir, base: base}, nil
}

// initPrivate makes the private repository at gitDir unless it exists:
// made aside and renamed into place, so that two makers never meet.
func (p *Provider) initPrivate(ctx context.Context, gitDir string) error {
	if _, err := os.Stat(filepath.Join(gitDir, "HEAD")); err == nil {
		return nil
	}
	tmp, err := os.MkdirTemp(p.dirs.tmp, "repo-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := gitsafe.Init(ctx, filepath.Join(tmp, "r.git")); err != nil {
		return fmt.Errorf("making a private repository: %w", err)
	}
	if err := os.Rename(filepath.Join(tmp, "r.git"), gitDir); err != nil {
		if _, serr := os.Stat(filepath.Join(gitDir, "HEAD")); serr == nil {
			return nil // made by another meanwhile
		}
		return fmt.Errorf("making a private repository: %w", err)
	}
	return nil
}

// checkSnapshotSize refuses a plain directory whose files (those no
// ignore rule covers) are more, or larger, than the caps.
func (p *Provider) checkSnapshotSize(ctx context.Context, g *gitsafe.Git) error {
	cmd := g.With("GIT_INDEX_FILE="+filepath.Join(p.dirs.tmp, "none-"+randomID())).
		Command(ctx, "ls-files", "-z", "--others", "--exclude-standard")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	files, size, over := p.countFiles(g.WorkTree(), out)
	if over {
		_ = cmd.Cancel()
	}
	werr := cmd.Wait()
	switch {
	case over:
		return fmt.Errorf("%w: %s is not a git repository, so its workspace starts from a copy of it, and a copy is capped at %d files and %s; it holds at least %d files, %s, that no .gitignore excludes; make it a git repository (git init, with a .gitignore for dependencies and build output), or list what agents need not see in a .gitignore there",
			ErrTooLarge, g.WorkTree(), p.cfg.MaxSnapshotFiles, formatSize(p.cfg.MaxSnapshotBytes), files, formatSize(size))
	case werr != nil:
		return fmt.Errorf("listing the files of %s: %w", g.WorkTree(), werr)
	}
	return nil
}

// countFiles counts the NUL-separated paths in r, and the bytes of those
// that are regular files, until either passes its cap.
func (p *Provider) countFiles(top string, r io.Reader) (files int, size int64, over bool) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<10)
	sc.Split(splitNUL)
	for sc.Scan() {
		files++
		if fi, err := os.Lstat(filepath.Join(top, filepath.FromSlash(sc.Text()))); err == nil && fi.Mode().IsRegular() {
			size += fi.Size()
		}
		if files > p.cfg.MaxSnapshotFiles || size > p.cfg.MaxSnapshotBytes {
			return files, size, true
		}
	}
	_, _ = io.Copy(io.Discard, r)
	return files, size, false
}

func splitNUL(data []byte, atEOF bool) (int, []byte, error) {
	for i, b := range data {
		if b == 0 {
			return i + 1, data[:i], nil
		}
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// formatSize says n bytes in the largest unit that keeps it whole-ish.
func formatSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
