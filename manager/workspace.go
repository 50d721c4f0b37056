package manager

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/troupe-dev/troupe/agenttypes"
)

// ReasonWorkspace: the agent's work could not be recorded on its branch
// when it ended (its workspace is left in place, so nothing is lost).
const ReasonWorkspace Reason = "workspace_error"

// workspaceCloseTime bounds recording an ended agent's workspace. The
// agent's own context is over by then, so the wait has its own bound.
const workspaceCloseTime = 2 * time.Minute

// openWorkspace gives a an agent of a type that changes files its own
// workspace, based on its parent's current state, or refuses the spawn:
// isolation is never advisory. A top-level agent that the backend runs
// gets its workspace there, from the worker that starts it.
func (m *Manager) openWorkspace(ctx context.Context, a *Agent) error {
	if !a.needsWorkspace() || a.remote() {
		return nil
	}
	req := agenttypes.WorkspaceRequest{Run: m.id, Agent: a.id, Dir: a.dir}
	for p := a.parent; p != nil; p = p.parent {
		if p.ws != nil {
			req.Parent = p.ws
			break
		}
	}
	return m.openWorkspaceFor(ctx, a, m.cfg.Workspaces, req)
}

// openWorkspaceFor opens a's workspace with ws, filling req from a's
// type, and makes it a's directory.
func (m *Manager) openWorkspaceFor(ctx context.Context, a *Agent, ws agenttypes.Workspaces, req agenttypes.WorkspaceRequest) error {
	if ws == nil {
		return fmt.Errorf("%w: type %q changes files, so each of its agents needs a workspace of its own, and the manager has none to give; set Config.Workspaces (the builtin workspace package makes them)", agenttypes.ErrWorkspace, a.typ.Name)
	}
	req.Policy, req.Setup = a.typ.Run, a.typ.Setup
	var (
		w   agenttypes.Workspace
		err error
	)
	m.guard("opening the workspace of agent ", a.id, func() {
		err = errors.New("the workspace provider panicked")
		w, err = ws.Open(ctx, req)
	})
	if err != nil {
		return fmt.Errorf("agent of type %q: %w", a.typ.Name, err)
	}
	a.ws, a.dir = w, w.Dir()
	return nil
}

// reopener is the manager's workspaces as the steps of a durable backend
// need them: opened on one worker, reopened on the others.
func (m *Manager) reopener(a *Agent) (agenttypes.WorkspaceReopener, error) {
	if ro, ok := m.cfg.Workspaces.(agenttypes.WorkspaceReopener); ok {
		return ro, nil
	}
	if m.cfg.Workspaces == nil {
		return nil, fmt.Errorf("%w: type %q changes files, so each of its agents needs a workspace of its own, and this worker's manager has none to give; set Config.Workspaces (the builtin workspace package makes them) on a state directory every worker shares", agenttypes.ErrWorkspace, a.typ.Name)
	}
	return nil, fmt.Errorf("%w: type %q changes files, and this worker's workspaces cannot be reopened by the other workers that run the agent's steps; give Config.Workspaces a provider that implements agenttypes.WorkspaceReopener (the builtin workspace package's does), on a state directory every worker shares", agenttypes.ErrWorkspace, a.typ.Name)
}

// openStepWorkspace opens the workspace of a step agent that changes
// files, durable, from its parent's, and returns its handle.
func (m *Manager) openStepWorkspace(ctx context.Context, a *Agent, sa StepAgent) (string, error) {
	ro, err := m.reopener(a)
	if err != nil {
		return "", err
	}
	req := agenttypes.WorkspaceRequest{Run: sa.Run, Agent: a.id, Dir: a.dir, Parent: a.step.parentWS, Durable: true}
	if err := m.openWorkspaceFor(ctx, a, ro, req); err != nil {
		return "", err
	}
	d, ok := a.ws.(agenttypes.DurableWorkspace)
	if !ok {
		return "", fmt.Errorf("%w: the workspace provider opened a workspace that is not durable for a durable request", agenttypes.ErrWorkspace)
	}
	return d.Handle(), nil
}

// stepWorkspace gives a step agent its workspace, opened by an earlier
// step, maybe on another worker; or, before it has one, the directory it
// works in as in process: its nearest ancestor's workspace's, whose
// current state a child that changes no files reads, and a child that
// does starts its own from.
func (m *Manager) stepWorkspace(ctx context.Context, a *Agent, sa StepAgent) error {
	handle := cmp.Or(sa.Workspace, sa.ParentWorkspace)
	if handle == "" {
		return nil
	}
	ro, err := m.reopener(a)
	if err != nil {
		return err
	}
	own := sa.Workspace != ""
	ws, err := m.reopen(ctx, ro, sa, own)
	if err != nil {
		return fmt.Errorf("agent of type %q: %w", a.typ.Name, err)
	}
	if own {
		a.ws = ws
	} else {
		a.step.parentWS = ws
	}
	a.dir = ws.Dir()
	return nil
}

// reopen reopens sa's own workspace, or its ancestor's, and checks that
// it is one of sa's run (its own, for own): a handle comes with a step's
// input, and names any workspace of the state directory.
func (m *Manager) reopen(ctx context.Context, ro agenttypes.WorkspaceReopener, sa StepAgent, own bool) (agenttypes.Workspace, error) {
	handle := sa.Workspace
	if !own {
		handle = sa.ParentWorkspace
	}
	var (
		ws  agenttypes.Workspace
		err error
	)
	m.guard("reopening a workspace for agent ", sa.ID, func() {
		err = errors.New("the workspace provider panicked")
		ws, err = ro.Reopen(ctx, handle)
	})
	if err != nil {
		return nil, err
	}
	d, ok := ws.(agenttypes.DurableWorkspace)
	if !ok {
		return nil, fmt.Errorf("%w: workspace %s is not durable", agenttypes.ErrWorkspace, handle)
	}
	if run, agent := d.Owner(); run != sa.Run || (own && agent != sa.ID) {
		return nil, fmt.Errorf("%w: workspace %s is agent %s's of run %s, not one of agent %s of run %s", agenttypes.ErrWorkspace, handle, agent, run, sa.ID, sa.Run)
	}
	return ws, nil
}

// CloseWorkspaceStep records the work in an ended agent's workspace on
// its branch and returns its changes, as the manager does when an agent
// ends. sa.Workspace names it; without it, the workspace opened for the
// agent is found by its run and ID (a start step given up as its Open
// finished), and there may be none. Run twice, it records once and
// returns the same changes. Like the manager's, a close that could not
// record everything returns the changes it has with its error.
func (m *Manager) CloseWorkspaceStep(ctx context.Context, sa StepAgent) (*agenttypes.Changes, error) {
	ro, ok := m.cfg.Workspaces.(agenttypes.WorkspaceReopener)
	if !ok {
		if sa.Workspace == "" {
			return nil, nil // none could have been opened here
		}
		return nil, fmt.Errorf("%w: closing workspace %s: this worker's workspaces cannot be reopened; give Config.Workspaces a provider that implements agenttypes.WorkspaceReopener, on the state directory the other workers share", agenttypes.ErrWorkspace, sa.Workspace)
	}
	var (
		ws  agenttypes.Workspace
		err error
	)
	if sa.Workspace != "" {
		ws, err = m.reopen(ctx, ro, sa, true)
	} else {
		m.guard("finding the workspace of agent ", sa.ID, func() {
			err = errors.New("the workspace provider panicked")
			ws, err = ro.Find(ctx, sa.Run, sa.ID)
		})
	}
	if err != nil || ws == nil {
		return nil, err
	}
	var ch *agenttypes.Changes
	m.guard("closing the workspace of agent ", sa.ID, func() {
		err = errors.New("the workspace provider panicked")
		ch, err = ws.Close(ctx)
	})
	if err != nil {
		return ch, fmt.Errorf("%w: recording the agent's work: %w (it is left in %s)", agenttypes.ErrWorkspace, err, ws.Dir())
	}
	return ch, nil
}

// needsWorkspace reports whether a gets a workspace: its type asks for a
// worktree, or a changing tool is among the tools a may call (a child
// whose parent may not change files is not given the tools that do, and
// needs none).
func (a *Agent) needsWorkspace() bool {
	if a.typ.Workspace == agenttypes.WorkspaceWorktree {
		return true
	}
	for _, name := range agenttypes.ChangingTools {
		if _, ok := a.tools.byName[name]; ok {
			return true
		}
	}
	return false
}

// closeWorkspace records an ended agent's work on its branch and
// returns its changes. It runs for every end, cancelled ones too, so
// partial work is kept.
func (a *Agent) closeWorkspace() (*agenttypes.Changes, error) {
	if a.ws == nil {
		return a.remoteChanges, nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.m.base), workspaceCloseTime)
	defer cancel()
	var (
		ch  *agenttypes.Changes
		err error
	)
	a.m.guard("closing the workspace of agent ", a.id, func() {
		err = errors.New("the workspace provider panicked")
		ch, err = a.ws.Close(ctx)
	})
	if err != nil {
		a.m.cfg.Logger.Error("an ended agent's work could not be recorded; its workspace is left in place", "agent", a.id, "dir", a.dir, "err", err)
		return ch, fmt.Errorf("%w: recording the agent's work: %w (it is left in %s)", agenttypes.ErrWorkspace, err, a.dir)
	}
	return ch, nil
}

// ChildChanges returns the changes of an ended child of the calling
// agent, named by its label or its ID.
func (t agentTree) ChildChanges(_ context.Context, child string) (*agenttypes.Changes, error) {
	c, err := t.a.child(child)
	if err != nil {
		return nil, err
	}
	select {
	case <-c.done:
	default:
		return nil, fmt.Errorf("%w: child %q is still running; wait for it (collect with wait) before merging its changes", ErrDelegation, child)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.result == nil {
		return nil, nil
	}
	return c.result.Changes, nil
}

// child finds a child of a by label or ID; a label names the latest
// child that has it.
func (a *Agent) child(name string) (*Agent, error) {
	a.mu.Lock()
	groups := append([]*Group(nil), a.groups...)
	a.mu.Unlock()
	var byLabel *Agent
	for _, g := range groups {
		for _, c := range g.agents {
			if c.id == name {
				return c, nil
			}
			if c.label == name {
				byLabel = c
			}
		}
	}
	if byLabel == nil {
		return nil, fmt.Errorf("%w: no child of agent %s is labelled or identified %q", ErrNotFound, a.id, name)
	}
	return byLabel, nil
}
