package manager

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
)

// The agent tree. A child's context derives from its parent's (cancelling
// or ending a parent ends its subtree), its budgets are clamped to what its
// ancestors have left, what it spends is charged to every ancestor (so a
// parent's budget bounds its whole subtree), and it gets no tool its parent
// lacks.

// Names of the tools the tree gives meaning to.
const (
	toolDelegate  = "delegate"
	toolCollect   = "collect"
	toolAskParent = "ask_parent"
)

// ErrDelegation is wrapped by refusals of children: the depth, fan-out or
// group limits, a budget the parent no longer has, the approval hook.
var ErrDelegation = agenttypes.ErrDelegation

// PriceKnower is implemented by models that know their price; a cost
// budget needs one.
type PriceKnower interface {
	KnowsPrice() bool
}

func knowsPrice(m llms.Model) bool {
	p, ok := m.(PriceKnower)
	return ok && p.KnowsPrice()
}

// chain calls fn for a and each of its ancestors, nearest first.
func (a *Agent) chain(fn func(x *Agent)) {
	for x := a; x != nil; x = x.parent {
		fn(x)
	}
}

// reserveChild counts a new child of a against MaxChildren and against
// MaxTreeAgents for its tree, refusing when either is reached.
func (a *Agent) reserveChild() error {
	m := a.m
	if n := a.children.Add(1); int(n) > m.cfg.MaxChildren {
		a.children.Add(-1)
		return fmt.Errorf("%w: agent %s has spawned %d children, the most one agent may (MaxChildren); do the rest of the work itself or in fewer, larger tasks", ErrDelegation, a.id, m.cfg.MaxChildren)
	}
	// The root counts itself: alive holds its descendants.
	if n := a.root.alive.Add(1); int(n)+1 > m.cfg.MaxTreeAgents {
		a.root.alive.Add(-1)
		a.children.Add(-1)
		return fmt.Errorf("%w: the tree of agent %s has %d agents alive, the most one tree may (MaxTreeAgents); wait for some children to finish", ErrDelegation, a.root.id, m.cfg.MaxTreeAgents)
	}
	return nil
}

// clampChild returns a child's budget with every limited field cut to what
// a and its ancestors have left, and refuses a child for whom nothing is
// left.
func (a *Agent) clampChild(b agenttypes.Budget) (agenttypes.Budget, error) {
	now := a.m.cfg.now()
	var err error
	a.chain(func(x *Agent) {
		x.mu.Lock()
		sub, calls := x.subtree, x.subToolCalls
		started := x.started
		x.mu.Unlock()
		lim := x.budget
		if lim.MaxTokens > 0 {
			left := lim.MaxTokens - sub.Total()
			if left < a.m.cfg.MinOutputTokens && err == nil {
				err = fmt.Errorf("%w: agent %s has %d of its %d tokens left, too few for a child", ErrDelegation, x.id, max(left, 0), lim.MaxTokens)
			}
			b.MaxTokens = clampInt(b.MaxTokens, left)
		}
		if lim.MaxToolCalls > 0 {
			left := lim.MaxToolCalls - calls
			if left <= 0 && err == nil {
				err = fmt.Errorf("%w: agent %s has used all %d of its tool calls", ErrDelegation, x.id, lim.MaxToolCalls)
			}
			b.MaxToolCalls = clampInt(b.MaxToolCalls, left)
		}
		if lim.MaxTime > 0 {
			// An agent that has not started has its whole time ahead: its
			// deadline, when it starts, is later than the child's.
			left := lim.MaxTime
			if !started.IsZero() {
				left = started.Add(lim.MaxTime).Sub(now)
			}
			if left <= 0 && err == nil {
				err = fmt.Errorf("%w: agent %s has used its %s", ErrDelegation, x.id, lim.MaxTime)
			}
			if b.MaxTime == 0 || left < b.MaxTime {
				b.MaxTime = max(left, time.Millisecond)
			}
		}
		if lim.MaxCostUSD > 0 {
			left := lim.MaxCostUSD - sub.CostUSD
			if left <= 0 && err == nil {
				err = fmt.Errorf("%w: agent %s has spent its $%g", ErrDelegation, x.id, lim.MaxCostUSD)
			}
			if b.MaxCostUSD == 0 || left < b.MaxCostUSD {
				b.MaxCostUSD = max(left, 1e-9)
			}
		}
	})
	return b, err
}

// clampInt cuts a limit (0: none) to left.
func clampInt(limit, left int) int {
	left = max(left, 1)
	if limit == 0 || left < limit {
		return left
	}
	return limit
}

// charge adds a model call's usage to a and to every ancestor's subtree.
func (a *Agent) charge(u Usage) {
	a.mu.Lock()
	a.usage = a.usage.Add(u)
	a.mu.Unlock()
	a.chain(func(x *Agent) {
		x.mu.Lock()
		x.subtree = x.subtree.Add(u)
		x.mu.Unlock()
	})
}

// chargeToolCall counts one tool call of a for a and its ancestors.
func (a *Agent) chargeToolCall() {
	a.mu.Lock()
	a.toolCalls++
	a.mu.Unlock()
	a.chain(func(x *Agent) {
		x.mu.Lock()
		x.subToolCalls++
		x.mu.Unlock()
	})
}

// treeLimit is the nearest limit of a kind that a run has reached or
// left least of, over the agent and its ancestors.
type treeLimit struct {
	agent *Agent // nil: nothing limits
	left  int    // tokens or tool calls left (negative: past it)
	limit int
}

// tokensLeft is how many tokens a and its ancestors still allow, the
// least over the chain.
func (a *Agent) tokensLeft() treeLimit {
	var t treeLimit
	a.chain(func(x *Agent) {
		if x.budget.MaxTokens <= 0 {
			return
		}
		x.mu.Lock()
		left := x.budget.MaxTokens - x.subtree.Total()
		x.mu.Unlock()
		if t.agent == nil || left < t.left {
			t = treeLimit{agent: x, left: left, limit: x.budget.MaxTokens}
		}
	})
	return t
}

// toolCallsLeft is how many tool calls a and its ancestors still allow.
func (a *Agent) toolCallsLeft() treeLimit {
	var t treeLimit
	a.chain(func(x *Agent) {
		if x.budget.MaxToolCalls <= 0 {
			return
		}
		x.mu.Lock()
		left := x.budget.MaxToolCalls - x.subToolCalls
		x.mu.Unlock()
		if t.agent == nil || left < t.left {
			t = treeLimit{agent: x, left: left, limit: x.budget.MaxToolCalls}
		}
	})
	return t
}

// costSpent reports the first agent of the chain whose cost budget is used
// up, or nil.
func (a *Agent) costSpent() *Agent {
	var spent *Agent
	a.chain(func(x *Agent) {
		if spent != nil || x.budget.MaxCostUSD <= 0 {
			return
		}
		x.mu.Lock()
		over := x.subtree.CostUSD >= x.budget.MaxCostUSD
		x.mu.Unlock()
		if over {
			spent = x
		}
	})
	return spent
}

// whose names the agent a limit belongs to, for messages about a child
// stopped by an ancestor's budget.
func (a *Agent) whose(x *Agent) string {
	if x == a {
		return ""
	}
	if x == a.parent {
		return " (its parent's)"
	}
	return " (of its ancestor " + x.id + ")"
}

// toolsFor is the tool set of an agent of setup's type at depth under
// parent, narrowed to narrow: the type's tools, only those the parent has,
// delegate and collect only below the depth limit, and ask_parent for every
// child when it is registered.
func (m *Manager) toolsFor(setup *typeSetup, parent *Agent, depth int, narrow []string) (*toolset, error) {
	names := setup.typ.Tools
	if len(narrow) > 0 {
		for _, n := range narrow {
			if !slices.Contains(names, n) {
				return nil, fmt.Errorf("%w: tool %q is not one of type %q's tools (%s); tools narrows a type's tools and never adds one", ErrBadRequest, n, setup.typ.Name, strings.Join(names, ", "))
			}
		}
		names = narrow
	}
	keep := make([]string, 0, len(names)+1)
	for _, n := range names {
		switch {
		case (n == toolDelegate || n == toolCollect) && depth >= m.cfg.MaxDepth:
		case n == toolAskParent && depth == 0:
		case parent != nil && n != toolAskParent && parent.tools.byName[n] == nil:
		default:
			if !slices.Contains(keep, n) {
				keep = append(keep, n)
			}
		}
	}
	if depth > 0 && !slices.Contains(keep, toolAskParent) {
		if _, err := m.cfg.Registry.Tool(toolAskParent); err == nil {
			keep = append(keep, toolAskParent)
		}
	}
	if slices.Equal(keep, setup.typ.Tools) {
		return setup.tools, nil
	}
	return setup.toolsetOf(m, keep)
}

// resumable returns the ended agent id names, for a new agent that
// continues its conversation.
func (m *Manager) resumable(id string, typ *agenttypes.Type, parent *Agent) (*Agent, error) {
	r := m.lookup(id)
	if r == nil {
		return nil, fmt.Errorf("%w: resume: no agent %q (only the most recent ended agents are kept)", ErrNotFound, id)
	}
	info := r.Info()
	switch {
	case !info.State.Terminal():
		return nil, fmt.Errorf("%w: resume: agent %s is still %s; resume an agent once it has ended", ErrBadRequest, id, info.State)
	case info.Type != typ.Name:
		return nil, fmt.Errorf("%w: resume: agent %s is of type %q, not %q", ErrBadRequest, id, info.Type, typ.Name)
	case parent != nil && r.root != parent.root:
		return nil, fmt.Errorf("%w: resume: agent %s is not of this agent tree", ErrBadRequest, id)
	}
	r.mu.Lock()
	kept := r.history != nil
	r.mu.Unlock()
	if !kept {
		return nil, fmt.Errorf("%w: resume: the conversation of agent %s is no longer kept (Config.KeepConversations)", ErrBadRequest, id)
	}
	return r, nil
}
