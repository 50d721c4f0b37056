package manager

import (
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
// isolation is never advisory.
func (m *Manager) openWorkspace(ctx context.Context, a *Agent) error {
	if !a.needsWorkspace() {
		return nil
	}
	if a.remote() {
		return fmt.Errorf("%w: type %q changes files, and its workspace would be on one worker of the backend only; run it without Config.Backend", agenttypes.ErrWorkspace, a.typ.Name)
	}
	if m.cfg.Workspaces == nil {
		return fmt.Errorf("%w: type %q changes files, so each of its agents needs a workspace of its own, and the manager has none to give; set Config.Workspaces (the builtin workspace package makes them)", agenttypes.ErrWorkspace, a.typ.Name)
	}
	req := agenttypes.WorkspaceRequest{
		Run: m.id, Agent: a.id, Dir: a.dir, Policy: a.typ.Run, Setup: a.typ.Setup,
	}
	for p := a.parent; p != nil; p = p.parent {
		if p.ws != nil {
			req.Parent = p.ws
			break
		}
	}
	var (
		ws  agenttypes.Workspace
		err error
	)
	m.guard("opening the workspace of agent "+a.id, func() {
		err = errors.New("the workspace provider panicked")
		ws, err = m.cfg.Workspaces.Open(ctx, req)
	})
	if err != nil {
		return fmt.Errorf("agent of type %q: %w", a.typ.Name, err)
	}
	a.ws, a.dir = ws, ws.Dir()
	return nil
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
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.m.base), workspaceCloseTime)
	defer cancel()
	var (
		ch  *agenttypes.Changes
		err error
	)
	a.m.guard("closing the workspace of agent "+a.id, func() {
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
