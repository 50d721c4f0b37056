package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/workspace"
)

// workspaces makes agents' workspaces for one command. The provider is
// made on the first agent that needs one, so a run that changes nothing
// leaves nothing under the state directory; making it first finishes
// what killed runs left behind (their work goes on their branches).
type workspaces struct {
	a        *app
	root     string // the project
	allowRun func(string) error

	once sync.Once
	p    *workspace.Provider
	err  error
}

var _ agenttypes.WorkspaceReopener = (*workspaces)(nil)

func (a *app) workspaces(root string) *workspaces {
	return &workspaces{a: a, root: root, allowRun: a.allowRun(root)}
}

func (w *workspaces) Open(ctx context.Context, req agenttypes.WorkspaceRequest) (agenttypes.Workspace, error) {
	p, err := w.get(ctx)
	if err != nil {
		return nil, err
	}
	return p.Open(ctx, req)
}

// Reopen reopens a durable workspace: a worker's, which the run's other
// workers opened on the same state directory.
func (w *workspaces) Reopen(ctx context.Context, handle string) (agenttypes.Workspace, error) {
	p, err := w.get(ctx)
	if err != nil {
		return nil, err
	}
	return p.Reopen(ctx, handle)
}

// Find finds a durable workspace whose handle a worker's step lost.
func (w *workspaces) Find(ctx context.Context, run, agent string) (agenttypes.Workspace, error) {
	p, err := w.get(ctx)
	if err != nil {
		return nil, err
	}
	return p.Find(ctx, run, agent)
}

// get returns the provider, made on the first call.
func (w *workspaces) get(ctx context.Context) (*workspace.Provider, error) {
	w.once.Do(func() { w.p, w.err = w.provider(ctx) })
	return w.p, w.err
}

func (w *workspaces) provider(ctx context.Context) (*workspace.Provider, error) {
	sum := sha256.Sum256([]byte(w.root))
	p, err := workspace.New(workspace.Config{
		StateDir: w.a.workspacesDir(),
		AllowRun: w.allowRun,
		CacheDir: filepath.Join(w.a.cacheDir(), "build", hex.EncodeToString(sum[:8])),
		Logger:   w.a.logger(),
	})
	if err != nil {
		return nil, err
	}
	recovered, err := p.Prune(ctx)
	if err != nil {
		w.a.logger().Warn("could not finish the workspaces of runs that were killed", "err", err)
	}
	for _, r := range recovered {
		if n := r.Changes.Files(); n > 0 {
			w.a.logger().Warn("recovered the work of an agent whose run was killed", "agent", r.Agent, "branch", r.Changes.Branch, "files", n)
		}
	}
	return p, nil
}

// close releases the provider, if one was made.
func (w *workspaces) close() {
	if w.p != nil {
		_ = w.p.Close()
	}
}

// allowRun lets commands run only if the user has trusted the project at
// root as it is: its tests and builds are its own code. The command's
// workspaces all come from that one project, so the decision is taken
// once, here, and not looked up again from agents' goroutines.
func (a *app) allowRun(root string) func(string) error {
	p := a.project(root)
	trusted := p.record != nil && p.verdict.Trusted
	return func(string) error {
		if trusted {
			return nil
		}
		return fmt.Errorf("commands run only in a project the user trusts, since its tests and builds are its own code, and %s is not trusted as it is; the user can allow them with 'troupe trust --repo %s'", p.root, p.root)
	}
}
