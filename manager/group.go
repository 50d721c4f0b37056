package manager

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/troupe-dev/troupe/agenttypes"
)

// Group is a set of agents spawned together: the children of one delegate
// request, or of one SpawnGroup call from Go. At most its concurrency run
// at once (the others wait as pending); results come back in task order.
type Group struct {
	id         string
	m          *Manager
	parent     *Agent // nil for a group of top-level agents
	tasks      []agenttypes.ChildTask
	agents     []*Agent
	background bool
	done       chan struct{}

	mu    sync.Mutex
	next  int    // the next held agent to let go
	let   []bool // which agents were let go (not ended while held)
	ended int
}

// GroupRequest asks for a group of agents.
type GroupRequest struct {
	// ParentID makes the agents children of that agent; empty spawns
	// top-level agents.
	ParentID string
	// Tasks are 1 to agenttypes.MaxDelegateTasks tasks; a task's Type
	// defaults to explore.
	Tasks []agenttypes.ChildTask
	// Concurrency is how many run at once, 1 to
	// agenttypes.MaxDelegateConcurrency; 0 means the default, 2.
	Concurrency int
	// Background marks a group its parent does not wait for; a parent may
	// have Config.MaxBackgroundGroups of them running.
	Background bool
	// Dir is the agents' directory; by default their parent's.
	Dir string
	// Detach lets the agents outlive their parent.
	Detach bool
}

// SpawnGroup validates every task, then spawns them all as one group and
// returns at once; the group's Wait, Collect and Cancel follow it. Either
// every task is spawned or none is.
func (m *Manager) SpawnGroup(ctx context.Context, req GroupRequest) (*Group, error) {
	n := len(req.Tasks)
	if n == 0 || n > agenttypes.MaxDelegateTasks {
		return nil, fmt.Errorf("%w: %d tasks; a group has 1 to %d", ErrBadRequest, n, agenttypes.MaxDelegateTasks)
	}
	conc := req.Concurrency
	if conc == 0 {
		conc = agenttypes.DefaultDelegateConcurrency
	}
	if conc < 1 || conc > agenttypes.MaxDelegateConcurrency {
		return nil, fmt.Errorf("%w: concurrency %d; use 1 to %d", ErrBadRequest, conc, agenttypes.MaxDelegateConcurrency)
	}
	g := &Group{id: "g-" + uuid.NewString()[:8], m: m, tasks: req.Tasks, background: req.Background, done: make(chan struct{})}
	dir := req.Dir
	if req.ParentID != "" {
		if g.parent = m.lookup(req.ParentID); g.parent == nil {
			return nil, fmt.Errorf("%w: parent %q", ErrNotFound, req.ParentID)
		}
		if dir == "" {
			dir = g.parent.dir
		}
		if req.Background {
			// Reserved, not only counted: two requests at once must not
			// both pass the limit.
			if !g.parent.reserveBackground(m.cfg.MaxBackgroundGroups) {
				return nil, fmt.Errorf("%w: agent %s has %d background groups running, the most it may (MaxBackgroundGroups); collect or cancel one first", ErrDelegation, g.parent.id, m.cfg.MaxBackgroundGroups)
			}
			defer g.parent.unreserveBackground()
		}
	}
	g.agents = make([]*Agent, 0, n)
	for i, t := range req.Tasks {
		a, err := m.prepare(ctx, m.taskRequest(req, dir, t))
		if err != nil {
			for _, p := range g.agents {
				m.discard(p)
			}
			return nil, fmt.Errorf("task %d (%s): %w", i+1, taskName(t), err)
		}
		a.group = g
		g.agents = append(g.agents, a)
	}
	for i, a := range g.agents {
		if err := m.admitHeld(ctx, a); err != nil {
			for _, p := range g.agents[:i] {
				p.Cancel()
			}
			for _, p := range g.agents[i:] {
				m.discard(p)
			}
			return nil, fmt.Errorf("task %d (%s): %w", i+1, taskName(req.Tasks[i]), err)
		}
	}
	if g.parent != nil {
		g.parent.mu.Lock()
		g.parent.groups = append(g.parent.groups, g)
		g.parent.mu.Unlock()
	}
	g.mu.Lock()
	g.let = make([]bool, n)
	for range min(conc, n) {
		g.releaseNextLocked()
	}
	g.mu.Unlock()
	return g, nil
}

func (m *Manager) taskRequest(req GroupRequest, dir string, t agenttypes.ChildTask) SpawnRequest {
	typ := t.Type
	if typ == "" && t.Resume != "" {
		if r := m.lookup(t.Resume); r != nil {
			typ = r.typ.Name
		}
	}
	if typ == "" {
		typ = "explore"
	}
	return SpawnRequest{
		Type: typ, Task: t.Prompt, Dir: dir, Model: t.Model, Budget: t.Budget, ParentID: req.ParentID,
		Label: t.Label, Tools: t.Tools, MaxOutputTokens: t.MaxOutputTokens, Resume: t.Resume, Detach: req.Detach,
	}
}

func taskName(t agenttypes.ChildTask) string {
	if t.Label != "" {
		return t.Label
	}
	if t.Type != "" {
		return t.Type
	}
	return "explore"
}

// childEnded lets the next held agent go, and closes the group when every
// agent has ended.
func (g *Group) childEnded(a *Agent) {
	g.mu.Lock()
	g.ended++
	// Only an agent that was let go frees a place: one that ended while
	// held never took one.
	if i := slices.Index(g.agents, a); i >= 0 && g.let[i] {
		g.releaseNextLocked()
	}
	whole := g.ended == len(g.agents)
	g.mu.Unlock()
	if !whole {
		return
	}
	close(g.done)
	if p := g.parent; p != nil {
		p.emit(&Event{Kind: EventGroupDone, Group: g.id, Text: g.summary()})
	}
	g.m.runGroupCallbacks(g)
}

// releaseNextLocked lets the next held agent go, passing over those that
// ended while held. g.mu is held.
func (g *Group) releaseNextLocked() {
	for g.next < len(g.agents) {
		i := g.next
		g.next++
		if g.m.releaseHeld(g.agents[i]) {
			g.let[i] = true
			return
		}
	}
}

// summary says how the group's agents ended, for the group's event.
func (g *Group) summary() string {
	counts := map[agenttypes.ChildStatus]int{}
	for _, a := range g.agents {
		counts[childStatus(a.resultNow())]++
	}
	parts := make([]string, 0, 4)
	for _, s := range []agenttypes.ChildStatus{agenttypes.ChildOK, agenttypes.ChildPartial, agenttypes.ChildFailed, agenttypes.ChildCancelled} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	return fmt.Sprintf("group of %d: %s", len(g.agents), strings.Join(parts, ", "))
}

// ID returns the group's ID.
func (g *Group) ID() string { return g.id }

// Agents returns the group's agents in task order.
func (g *Group) Agents() []*Agent { return append([]*Agent(nil), g.agents...) }

// Children returns the agents' labels and IDs in task order.
func (g *Group) Children() []agenttypes.ChildRef {
	out := make([]agenttypes.ChildRef, len(g.agents))
	for i, a := range g.agents {
		out[i] = agenttypes.ChildRef{Label: a.label, ID: a.id}
	}
	return out
}

// Done is closed when every agent of the group has ended.
func (g *Group) Done() <-chan struct{} { return g.done }

// Wait blocks until every agent has ended, or ctx ends, and returns their
// results in task order. Called from a tool of the group's parent, the
// parent lends its slot while it waits.
func (g *Group) Wait(ctx context.Context) ([]Result, error) {
	return g.m.await(ctx, g.agents)
}

// Collect returns the group as it is now: a result for every agent in task
// order (the final one for those that ended, status running for the
// others) and whether all have ended.
func (g *Group) Collect() *agenttypes.CollectResponse {
	resp := &agenttypes.CollectResponse{Group: g.id, Results: make([]agenttypes.ChildResult, len(g.agents)), Done: true}
	for i, a := range g.agents {
		select {
		case <-a.done:
			resp.Results[i] = ChildResultOf(a.label, a.resultNow())
		default:
			// Done says what these results say: the group's own done
			// closes a moment after its last agent's, on that agent's
			// goroutine, and a caller that waited for the agents may get
			// here in between.
			resp.Done = false
			info := a.Info()
			resp.Results[i] = agenttypes.ChildResult{
				Label: a.label, ID: a.id, Type: info.Type, Model: info.Model, Status: agenttypes.ChildRunning,
				Usage: info.Usage, ToolCalls: info.ToolCalls, Turns: info.Turns,
			}
		}
	}
	return resp
}

// Cancel cancels every agent of the group that has not ended.
func (g *Group) Cancel() {
	for _, a := range g.agents {
		a.Cancel()
	}
}

// OnGroupDone registers fn to be called once for every group whose agents
// have all ended, after their own OnComplete callbacks. fn runs on the
// goroutine of the group's last agent; a panic in it is logged and
// recovered.
func (m *Manager) OnGroupDone(fn func(*Group)) {
	m.callbacksMu.Lock()
	m.groupCallbacks = append(m.groupCallbacks, fn)
	m.callbacksMu.Unlock()
}

func (m *Manager) runGroupCallbacks(g *Group) {
	m.callbacksMu.RLock()
	cbs := m.groupCallbacks
	m.callbacksMu.RUnlock()
	for _, fn := range cbs {
		m.guard("OnGroupDone callback for group ", g.id, func() { fn(g) })
	}
}

// reserveBackground takes one of a's background groups for a group being
// spawned, if fewer than limit are running or being spawned.
func (a *Agent) reserveBackground(limit int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.backgroundGroupsLocked()+a.bgSpawning >= limit {
		return false
	}
	a.bgSpawning++
	return true
}

func (a *Agent) unreserveBackground() {
	a.mu.Lock()
	a.bgSpawning--
	a.mu.Unlock()
}

// backgroundGroupsLocked counts a's background groups still running; a.mu
// is held.
func (a *Agent) backgroundGroupsLocked() int {
	n := 0
	for _, g := range a.groups {
		select {
		case <-g.done:
		default:
			if g.background {
				n++
			}
		}
	}
	return n
}

// childStatus is how a parent model reads a result.
func childStatus(r Result) agenttypes.ChildStatus {
	switch {
	case r.State == Completed:
		return agenttypes.ChildOK
	case r.State == Cancelled:
		return agenttypes.ChildCancelled
	case r.Partial && r.Output != "":
		return agenttypes.ChildPartial
	case r.State == Failed && strings.HasPrefix(string(r.Reason), "budget_"):
		return agenttypes.ChildPartial
	}
	return agenttypes.ChildFailed
}

// ChildResultOf is a result as a parent agent reads it.
func ChildResultOf(label string, r Result) agenttypes.ChildResult {
	return agenttypes.ChildResult{
		Label: label, ID: r.ID, Type: r.Type, Model: r.Model, Status: childStatus(r), Reason: string(r.Reason),
		Usage: r.Usage, ToolCalls: r.ToolCalls, Turns: r.Turns, Duration: r.Duration, Report: r.Output, Error: r.Error,
		Changes: r.Changes,
	}
}
