package manager

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/models/modelcap"
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
	toolMerge     = "merge"
)

// ErrDelegation is wrapped by refusals of children: the depth, fan-out or
// group limits, a budget the parent no longer has, the approval hook.
var ErrDelegation = agenttypes.ErrDelegation

func knowsPrice(m llms.Model) bool {
	_, ok := modelcap.Price(m)
	return ok
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

// charge adds a model call's usage to a and to every ancestor's subtree,
// with root.budgetMu held. The counts change under each agent's mu as
// well, for snapshots; whoever holds budgetMu reads them without it.
func (a *Agent) charge(u Usage) {
	a.mu.Lock()
	a.usage = a.usage.Add(u)
	a.subtree = a.subtree.Add(u)
	a.mu.Unlock()
	for x := a.parent; x != nil; x = x.parent {
		x.mu.Lock()
		x.subtree = x.subtree.Add(u)
		x.mu.Unlock()
	}
}

// takeToolCalls takes up to want tool calls for a from what a and its
// ancestors allow, counting them at once, and says how many it took. When
// it took fewer, limit is the budget that ran out. Checking and counting
// are one step for the whole tree, so siblings running at once cannot
// pass a budget together.
func (a *Agent) takeToolCalls(want int) (took int, limit treeLimit) {
	a.root.budgetMu.Lock()
	defer a.root.budgetMu.Unlock()
	took = want
	a.chain(func(x *Agent) {
		if x.budget.MaxToolCalls <= 0 {
			return
		}
		left := x.budget.MaxToolCalls - x.subToolCalls // written only under budgetMu
		if left < took {
			took = max(left, 0)
			limit = treeLimit{agent: x, left: left, limit: x.budget.MaxToolCalls}
		}
	})
	if took == 0 {
		return 0, limit
	}
	a.mu.Lock()
	a.toolCalls += took
	a.subToolCalls += took
	a.mu.Unlock()
	for x := a.parent; x != nil; x = x.parent {
		x.mu.Lock()
		x.subToolCalls += took
		x.mu.Unlock()
	}
	return took, limit
}

// treeLimit is the nearest limit of a kind that a run has reached or
// left least of, over the agent and its ancestors.
type treeLimit struct {
	agent *Agent // nil: nothing limits
	left  int    // tokens or tool calls left (negative: past it)
	limit int
	cost  bool // the agent's cost budget, not its tokens, is what ran out
}

// reason and err say which budget a model call was refused on.
func (t treeLimit) reason() Reason {
	if t.cost {
		return ReasonBudgetCost
	}
	return ReasonBudgetTokens
}

func (t treeLimit) err(a *Agent) error {
	if t.cost {
		return costBudgetError(a, t.agent)
	}
	return fmt.Errorf("%w: token budget%s of %d used up", ErrBudgetExceeded, a.whose(t.agent), t.limit)
}

// refusal says why call c was refused before it was made, and, when the
// budget could never pay for it, what budget would: a budget that is too
// small for one call is no budget "used up".
func (t treeLimit) refusal(a *Agent, c modelCall) error {
	if t.cost {
		return costBudgetError(a, t.agent)
	}
	least := a.m.cfg.MinOutputTokens
	input := fmt.Sprintf("about %d tokens", c.input)
	if c.toolTokens > 0 {
		input += fmt.Sprintf(" (%d of them the tool definitions)", c.toolTokens)
	}
	if spent := t.limit - t.left; spent <= 0 {
		return fmt.Errorf("%w: token budget%s of %d is too small for one model call: its input is %s and its output needs at least %d; allow at least %d tokens",
			ErrBudgetExceeded, a.whose(t.agent), t.limit, input, least, c.input+least)
	}
	return fmt.Errorf("%w: token budget%s of %d used up: %d tokens are left, too few for the next model call, whose input is %s and whose output needs at least %d",
		ErrBudgetExceeded, a.whose(t.agent), t.limit, max(t.left, 0), input, least)
}

// toolCallsLeft is how many tool calls a's budget and its ancestors'
// leave it, or modelcap.Unlimited.
func (a *Agent) toolCallsLeft() int {
	left := modelcap.Unlimited
	a.root.budgetMu.Lock()
	defer a.root.budgetMu.Unlock()
	a.chain(func(x *Agent) {
		if x.budget.MaxToolCalls <= 0 {
			return
		}
		n := max(x.budget.MaxToolCalls-x.subToolCalls, 0) // written only under budgetMu
		if left == modelcap.Unlimited || n < left {
			left = n
		}
	})
	return left
}

// costBudgetError says that x's cost budget, which bounds a, is spent.
func costBudgetError(a, x *Agent) error {
	return fmt.Errorf("%w: cost budget%s of $%.4f used up", ErrBudgetExceeded, a.whose(x), x.budget.MaxCostUSD)
}

// tokenBudgets calls fn for a and each of its ancestors that has a token
// budget, with what that budget has left; root.budgetMu is held, so the
// counts, written only under it, are read without each agent's mu.
func (a *Agent) tokenBudgets(fn func(x *Agent, left int)) {
	a.chain(func(x *Agent) {
		if x.budget.MaxTokens <= 0 {
			return
		}
		fn(x, x.budget.MaxTokens-x.subtree.Total())
	})
}

// tighter keeps in t x's token budget when it has less left than t's.
func (t *treeLimit) tighter(x *Agent, left int) {
	if t.agent == nil || left < t.left {
		*t = treeLimit{agent: x, left: left, limit: x.budget.MaxTokens}
	}
}

// countLiving adds a, just prepared, to its own and its ancestors' count
// of agents that have not ended, unless it has ended already;
// uncountLiving takes it out when it ends. The counts say how many agents
// may want a share of a budget.
func (a *Agent) countLiving() {
	a.root.budgetMu.Lock()
	defer a.root.budgetMu.Unlock()
	if a.uncounted {
		return
	}
	a.counted = true
	a.chain(func(x *Agent) { x.living++ })
}

func (a *Agent) uncountLiving() {
	a.root.budgetMu.Lock()
	defer a.root.budgetMu.Unlock()
	a.uncounted = true
	if a.counted {
		a.counted = false
		a.chain(func(x *Agent) { x.living-- })
	}
}

// reserveCall holds tokens (and, for a model with a price, dollars) for
// one model call of a before it is made: its input, estimated at in
// tokens, and its output. The output is capped at maxOut (0: no cap of its
// own), at the model's own limit, and, for every token or cost budget of
// the chain, at a fair share of what that budget has neither spent nor
// lent to calls in flight: an equal part for each agent of its
// subtree that has not ended and has no call in flight. A lone agent gets
// all that is left; siblings calling at once each get their part and run
// together, a parent waiting on its children keeps a part to read their
// reports and answer, and the calls together overshoot a budget by no
// more than their estimates were short. It returns the output cap to send and what it
// holds, to release once the call's usage is charged. When what is left is
// held by calls in flight, it waits for them; when too little is left even
// so, held is not ok and limit is the budget that ran out. An error is the
// context's.
func (a *Agent) reserveCall(ctx context.Context, in, maxOut int) (out int, held holding, limit treeLimit, err error) {
	if o, ok := a.model.(modelcap.OutputLimiter); ok {
		if n := o.OutputLimit(); n > 0 && (maxOut == 0 || n < maxOut) {
			maxOut = n
		}
	}
	pricer, priced := modelcap.Price(a.model)
	if !priced {
		pricer = nil
	}
	root := a.root
	for {
		root.budgetMu.Lock()
		s := a.shareFor(in, maxOut, pricer)
		switch {
		case s.spent.agent == nil && !s.costLimited:
			root.budgetMu.Unlock()
			return maxOut, holding{ok: true}, treeLimit{}, nil
		case s.spent.agent != nil && s.spent.left-in < a.m.cfg.MinOutputTokens:
			root.budgetMu.Unlock()
			return 0, holding{}, s.spent, nil
		case s.costOut.agent != nil:
			root.budgetMu.Unlock()
			return 0, holding{}, s.costOut, nil
		case !s.short:
			held := a.hold(in, s.out, pricer)
			root.budgetMu.Unlock()
			return s.out, held, treeLimit{}, nil
		}
		if root.freed == nil {
			root.freed = make(chan struct{})
		}
		freed := root.freed
		root.budgetMu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return 0, holding{}, treeLimit{}, ctx.Err()
		}
	}
}

// callShare is what a call may hold now of the budgets of its chain.
type callShare struct {
	out         int       // the output cap: the least of the budgets' fair shares
	short       bool      // a budget has too little free for the call until others give back
	costLimited bool      // a cost budget of the chain bounds the call
	spent       treeLimit // the token budget with least left
	costOut     treeLimit // a cost budget with too little left for the call at all
}

// shareFor works out a call's share, with root.budgetMu held: for every
// token or cost budget of the chain, an equal part of what it has neither
// spent nor lent to calls in flight, for each agent of its subtree that
// has not ended and has no call in flight. pricer is nil for a model with
// no price.
func (a *Agent) shareFor(in, maxOut int, pricer modelcap.Pricer) callShare {
	least := a.m.cfg.MinOutputTokens
	s := callShare{out: maxOut}
	share := func(x *Agent, free int) {
		if free < least {
			s.short = true
			return
		}
		if part := max(free/max(x.living-x.calls, 1), least); s.out == 0 || part < s.out {
			s.out = part
		}
	}
	a.tokenBudgets(func(x *Agent, left int) {
		s.spent.tighter(x, left)
		share(x, left-x.reserved-in)
	})
	if pricer == nil {
		return s
	}
	// A cost budget caps output as a token budget does, through the price
	// of an output token.
	inUSD, _ := pricer.Cost(in, 0)
	perOut, _ := pricer.Cost(0, 1)
	a.chain(func(x *Agent) {
		if x.budget.MaxCostUSD <= 0 || perOut <= 0 {
			return
		}
		s.costLimited = true
		x.mu.Lock()
		left := x.budget.MaxCostUSD - x.subtree.CostUSD
		x.mu.Unlock()
		if left-inUSD < float64(least)*perOut {
			if s.costOut.agent == nil {
				s.costOut = treeLimit{agent: x, cost: true}
			}
			return
		}
		share(x, int((left-x.reservedUSD-inUSD)/perOut))
	})
	return s
}

// hold lends a call's tokens (and dollars) from every budget of the chain,
// with root.budgetMu held; release gives them back.
func (a *Agent) hold(in, out int, pricer modelcap.Pricer) holding {
	n, usd := in+out, 0.0
	if pricer != nil {
		usd, _ = pricer.Cost(in, out)
	}
	a.chain(func(x *Agent) { x.reserved += n; x.reservedUSD += usd; x.calls++ })
	return holding{ok: true, a: a, tokens: n, usd: usd}
}

// holding is what a call holds of its chain's budgets: nothing (a is nil)
// when no budget bounds it. ok is false for a call that was refused.
type holding struct {
	ok     bool
	a      *Agent
	tokens int
	usd    float64
}

func (h *holding) release() {
	if h.a == nil {
		return
	}
	root := h.a.root
	root.budgetMu.Lock()
	h.releaseLocked()
	root.budgetMu.Unlock()
}

// releaseLocked is release with root.budgetMu held; later releases do
// nothing.
func (h *holding) releaseLocked() {
	a := h.a
	if a == nil {
		return
	}
	a.chain(func(x *Agent) { x.reserved -= h.tokens; x.reservedUSD -= h.usd; x.calls-- })
	if root := a.root; root.freed != nil {
		close(root.freed)
		root.freed = nil
	}
	h.a = nil
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
func (m *Manager) toolsFor(setup *typeSetup, parent *Agent, depth, maxDepth int, narrow []string) (*toolset, error) {
	own := m.expandTools(setup.typ, setup.typ.Tools)
	names := own
	if len(narrow) > 0 {
		var kept []string
		for _, n := range narrow {
			covered := m.expandTools(setup.typ, []string{n})
			if len(covered) == 0 || slices.ContainsFunc(covered, func(c string) bool { return !slices.Contains(own, c) }) {
				return nil, fmt.Errorf("%w: tool %q is not one of type %q's tools (%s); tools narrows a type's tools and never adds one", ErrBadRequest, n, setup.typ.Name, strings.Join(own, ", "))
			}
			kept = append(kept, covered...)
		}
		names = kept
	}
	// Gathered on the stack: for most agents it is the type's own set,
	// and the toolset made once for the type is theirs.
	var buf [16]string
	keep := buf[:0]
	for _, n := range names {
		switch {
		case (n == toolDelegate || n == toolCollect) && depth >= maxDepth:
		case n == toolAskParent && depth == 0:
		case parent != nil && n != toolAskParent && !parent.passesDown(n):
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
	if slices.Equal(keep, own) && slices.Equal(setup.tools.order, own) {
		return setup.tools, nil
	}
	return setup.toolsetOf(m, slices.Clone(keep))
}

// resumable returns the ended agent id names, for a new agent that
// continues its conversation.
//
// An agent whose loop runs on the backend (remote) resumes one that ran
// there too, whose conversation the backend has.
func (m *Manager) resumable(id string, typ *agenttypes.Type, parent *Agent, remote bool) (*Agent, error) {
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
	case remote != r.remote():
		return nil, fmt.Errorf("%w: resume: agent %s ran %s, and this one would run %s; resume it where it ran", ErrBadRequest, id, where(r.remote()), where(remote))
	case remote:
		return r, nil // its conversation is the backend's
	}
	r.mu.Lock()
	kept := r.history != nil
	r.mu.Unlock()
	if !kept {
		return nil, fmt.Errorf("%w: resume: the conversation of agent %s is no longer kept (Config.KeepConversations)", ErrBadRequest, id)
	}
	return r, nil
}

// where names where an agent's loop runs.
func where(remote bool) string {
	if remote {
		return "on the manager's backend"
	}
	return "in this process"
}
