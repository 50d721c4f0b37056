package workspace

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/gitsafe"
)

// Defaults of the snapshot of a directory that is not a git repository.
const (
	DefaultMaxSnapshotFiles = 20_000
	DefaultMaxSnapshotBytes = 512 << 20
)

// cleanupTime bounds undoing a failed Open.
const cleanupTime = time.Minute

// ErrTooLarge is wrapped when a directory that is not a git repository
// holds more than a snapshot may copy. Its message says what the user can
// do about the directory; a program can also raise the caps
// (Config.MaxSnapshotFiles, MaxSnapshotBytes).
var ErrTooLarge = errors.New("directory too large to snapshot")

// Config configures a Provider.
type Config struct {
	// StateDir is where workspaces, their records, patches and private
	// repositories live; never inside the user's tree. Required.
	StateDir string
	// MaxSnapshotFiles and MaxSnapshotBytes bound the copy of a
	// directory that is not a git repository (files it does not ignore);
	// 0 means DefaultMaxSnapshotFiles and DefaultMaxSnapshotBytes.
	MaxSnapshotFiles int
	MaxSnapshotBytes int64
	// ExcludesFile holds ignore patterns applied to every snapshot besides
	// the project's own .gitignore files and .git/info/exclude, so that
	// what the user keeps out of git everywhere (.env, say) stays out of
	// workspaces too. Empty finds the user's own: core.excludesFile of
	// the global git configuration, else $XDG_CONFIG_HOME/git/ignore.
	ExcludesFile string
	// AllowRun decides whether commands may run in the workspaces of a
	// project (its directory is given): nil lets them, an error refuses
	// them and is what the agent is told. A project's tests and builds
	// are its own code, so allow them only in a project the user
	// trusts. When AllowRun itself is nil, no command runs.
	AllowRun func(project string) error
	// CacheDir, when set, is a directory commands may write besides their
	// workspace and their private temporary directory: the build caches
	// they are pointed at (GOCACHE) live there, so that each command does
	// not rebuild everything. Give each project a cache of its own: what
	// one command writes there, the next one reads.
	CacheDir string
	// Logger receives what Prune recovers and what Close had to fall back
	// on; nil discards.
	Logger *slog.Logger
}

// Provider makes workspaces under its state directory. It implements
// agenttypes.Workspaces, and agenttypes.WorkspaceReopener for the
// durable ones. It holds a lock for as long as it is open, by which
// Prune in another process knows its workspaces are alive.
type Provider struct {
	cfg  Config
	dirs stateDirs
	// stateID names the state directory in durable workspaces' handles.
	stateID  string
	owner    string
	lock     *os.File
	lockPath string
	excludes string
	// warnOnce says once that commands ran unconfined.
	warnOnce sync.Once
}

var _ agenttypes.Workspaces = (*Provider)(nil)

// stateDirs are the directories under the state directory.
type stateDirs struct {
	root      string
	records   string // NAME.json: one per workspace, for Prune
	owners    string // ID.lock: one per live Provider
	trees     string // NAME/: the worktrees
	patches   string // NAME.patch
	snapshots string // KEY.git: private repositories of plain directories
	tmp       string // private index files
	scratch   string // an empty work tree for repository-wide commands
	locks     string // NAME.lock: one per open workspace; open-KEY.lock: one per durable Open under way
	closed    string // NAME.json: what each closed durable workspace recorded
}

// New makes a Provider. The state directory is made if need be.
func New(cfg Config) (*Provider, error) {
	if cfg.StateDir == "" {
		return nil, fmt.Errorf("%w: Config.StateDir is empty; name the directory workspaces live in (troupe's state directory)", agenttypes.ErrWorkspace)
	}
	if cfg.MaxSnapshotFiles <= 0 {
		cfg.MaxSnapshotFiles = DefaultMaxSnapshotFiles
	}
	if cfg.MaxSnapshotBytes <= 0 {
		cfg.MaxSnapshotBytes = DefaultMaxSnapshotBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	abs, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return nil, fmt.Errorf("%w: state directory %s: %w", agenttypes.ErrWorkspace, cfg.StateDir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("%w: making the state directory: %w", agenttypes.ErrWorkspace, err)
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, fmt.Errorf("%w: state directory %s: %w", agenttypes.ErrWorkspace, cfg.StateDir, err)
	}
	d := stateDirs{
		root: abs, records: filepath.Join(abs, "records"), owners: filepath.Join(abs, "owners"),
		trees: filepath.Join(abs, "trees"), patches: filepath.Join(abs, "patches"),
		snapshots: filepath.Join(abs, "snapshots"), tmp: filepath.Join(abs, "tmp"), scratch: filepath.Join(abs, "scratch"),
		locks: filepath.Join(abs, "locks"), closed: filepath.Join(abs, "closed"),
	}
	for _, dir := range []string{d.records, d.owners, d.trees, d.patches, d.snapshots, d.tmp, d.scratch, d.locks, d.closed} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("%w: making %s: %w", agenttypes.ErrWorkspace, dir, err)
		}
	}
	id, err := loadStateID(abs)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", agenttypes.ErrWorkspace, err)
	}
	p := &Provider{cfg: cfg, dirs: d, stateID: id, owner: randomID()}
	p.lockPath = filepath.Join(d.owners, p.owner+".lock")
	if p.lock, err = createLocked(d.owners, p.owner+".lock"); err != nil {
		return nil, fmt.Errorf("%w: taking the state directory's owner lock: %w", agenttypes.ErrWorkspace, err)
	}
	p.excludes = cfg.ExcludesFile
	if p.excludes == "" {
		p.excludes = userExcludesFile()
	}
	return p, nil
}

// Close releases the Provider's lock. Workspaces it opened and did not
// close are then left for the next Prune, by this process or another, to
// record and remove.
func (p *Provider) Close() error {
	if p.lock == nil {
		return nil
	}
	err := os.Remove(p.lockPath)
	if cerr := p.lock.Close(); err == nil {
		err = cerr
	}
	p.lock = nil
	return err
}

// Open makes a workspace for req. See the package documentation for
// where it starts from. Any failure leaves nothing behind and is an
// error wrapping agenttypes.ErrWorkspace.
func (p *Provider) Open(ctx context.Context, req agenttypes.WorkspaceRequest) (agenttypes.Workspace, error) {
	w, err := p.open(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", agenttypes.ErrWorkspace, err)
	}
	return w, nil
}

func (p *Provider) open(ctx context.Context, req agenttypes.WorkspaceRequest) (*Workspace, error) {
	if req.Agent == "" {
		return nil, errors.New("the request names no agent")
	}
	if req.Durable {
		return p.openDurable(ctx, req)
	}
	return p.openNew(ctx, req)
}

// openNew makes a new workspace for req.
func (p *Provider) openNew(ctx context.Context, req agenttypes.WorkspaceRequest) (*Workspace, error) {
	src, err := p.source(ctx, req)
	if err != nil {
		return nil, err
	}
	w, err := p.create(ctx, req, src)
	if err != nil {
		return nil, err
	}
	err = w.runSetup(ctx, req.Setup)
	if err == nil {
		w.rec.Ready = true
		if err = p.saveRecord(w.rec); err != nil {
			err = fmt.Errorf("recording the workspace: %w", err)
		}
	}
	if err != nil {
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		if rerr := w.discard(cctx); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return nil, err
	}
	return w, nil
}

// repoGit returns a Git for repository-wide commands (worktrees,
// branches, objects) on the repository whose common directory is common:
// its work tree is an empty directory of troupe's, so no user's index or
// file is in reach.
func (p *Provider) repoGit(ctx context.Context, common, top string) (*gitsafe.Git, error) {
	return gitsafe.New(ctx, p.dirs.scratch, gitsafe.Options{GitDir: common, Within: []string{top}, Config: p.config()})
}

// workspaceConfig holds what every workspace's git runs with besides
// gitsafe's overrides: a worktree is checked out whole, whatever sparse
// checkout the project uses, so that no file looks deleted when it is
// recorded.
var workspaceConfig = []gitsafe.Setting{
	{Key: "core.sparseCheckout", Value: "false"},
	{Key: "core.sparseCheckoutCone", Value: "false"},
	{Key: "index.sparse", Value: "false"},
}

// config is workspaceConfig and the override that applies the user's
// own excludes.
func (p *Provider) config() []gitsafe.Setting {
	cfg := slices.Clone(workspaceConfig)
	if p.excludes != "" {
		cfg = append(cfg, gitsafe.Setting{Key: "core.excludesFile", Value: p.excludes})
	}
	return cfg
}

// cleanupContext is for undoing what a cancelled call began: it outlives
// ctx's cancellation, for a bounded time.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTime)
}

func randomID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
