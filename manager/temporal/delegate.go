package temporal

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	enumspb "go.temporal.io/api/enums/v1"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
)

// maxLabel is the longest label a task may have, as in the manager.
const maxLabel = 32

// errDelegation words a refusal as the manager's ErrDelegation does.
var errDelegation = errors.New("delegation refused")

// taskRefusal is a refusal of one task, worded as the manager words it:
// "task 1 (label): delegation refused: …".
type taskRefusal struct {
	task string
	err  error
}

func (e *taskRefusal) Error() string { return e.task + ": delegation refused: " + e.err.Error() }

// child is one task of a delegate call, as it runs.
type child struct {
	task    agenttypes.ChildTask
	id      string
	ceiling agenttypes.Budget
	future  workflow.ChildWorkflowFuture
	out     agentOutput
	err     error
	charged bool   // what it spent is charged to its parent
	refused string // why it was not started: its share was too small
	started bool
	ended   bool
	final   *agenttypes.ChildResult // its result, carried from a workflow run before
	// treeAgents is its subtree's share of the tree's agents.
	treeAgents int
}

// tooLittle says why a child's share of budget is too small to start it
// with, or "".
func tooLittle(share, budget agenttypes.Budget) string {
	switch {
	case budget.MaxTokens > 0 && share.MaxTokens < minChildTokens:
		return fmt.Sprintf("its share of its parent's tokens, %d, is too few for a model call", share.MaxTokens)
	case budget.MaxToolCalls > 0 && share.MaxToolCalls < 1:
		return "its parent had no tool calls left to share"
	}
	return ""
}

// delegate runs a delegate call's tasks as child workflows, at most its
// concurrency at once, and returns their results in task order; in the
// background it returns at once, and the children run on as a group that
// collect reads. Each child's budget is at most an equal share of what
// the agent has left when it starts, held until it ends and then charged
// what it spent, so children running at once, in every group, cannot
// spend more than their parent has. An error is a refusal, which the
// delegate tool reports to the model.
func (r *agentRun) delegate(ctx workflow.Context, tc manager.TreeCall) (*agenttypes.DelegateResponse, error) {
	kids, conc, err := r.newChildren(ctx, tc.Delegate)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errDelegation, err)
	}
	resp := &agenttypes.DelegateResponse{Group: "g-" + newID(ctx)[:8]} // as the manager names groups
	for _, k := range kids {
		resp.Children = append(resp.Children, agenttypes.ChildRef{Label: k.task.Label, ID: k.id})
	}
	if tc.Delegate.Background {
		gctx, cancel := workflow.WithCancel(ctx)
		g := &group{id: resp.Group, kids: kids, cancel: cancel}
		r.groups = append(r.groups, g)
		workflow.Go(gctx, func(gctx workflow.Context) {
			r.runChildren(gctx, g.id, kids, conc, true)
			g.done = true
		})
		return resp, nil
	}
	r.runChildren(ctx, resp.Group, kids, conc, false)
	for _, k := range kids {
		resp.Results = append(resp.Results, k.result())
	}
	return resp, nil
}

// group is a background delegation's children.
type group struct {
	id     string
	kids   []*child
	done   bool // every child has ended, or was never started
	cancel workflow.CancelFunc
}

// runChildren runs kids, at most conc at once, until every one has ended
// or, once ctx ends, every one started has.
func (r *agentRun) runChildren(ctx workflow.Context, groupID string, kids []*child, conc int, background bool) {
	// Children are waited for on a context that outlives a cancel, so
	// that a cancelled parent still ends after them with what they spent.
	wait, _ := workflow.NewDisconnectedContext(ctx)
	sel := workflow.NewSelector(wait)
	running, next := 0, 0
	for {
		for running < conc && next < len(kids) && ctx.Err() == nil {
			k := kids[next]
			next++
			k.ceiling = r.share(ctx, conc-running, background)
			if why := tooLittle(k.ceiling, r.sa.Budget); why != "" {
				k.refused = why
				continue
			}
			r.held = addBudget(r.held, k.ceiling, 1)
			r.spawn(ctx, groupID, k, conc)
			r.kids = append(r.kids, kidRecord{ID: k.id, Label: k.task.Label})
			r.treeHeld += k.treeAgents
			k.started = true
			running++
			sel.AddFuture(k.future, func(f workflow.Future) {
				k.err = f.Get(wait, &k.out)
				k.ended = true
				r.endedKids = append(r.endedKids, k.id)
				r.kidEnded(k)
				r.held = addBudget(r.held, k.ceiling, -1)
				r.treeHeld -= k.treeAgents
				r.charge(k)
			})
		}
		if running == 0 {
			return // all ended, or cancelled before the rest started
		}
		sel.Select(wait)
		running--
	}
}

// collect answers a collect of a background group: its results so far,
// waiting up to req.Wait for it to finish.
func (r *agentRun) collect(ctx workflow.Context, req *agenttypes.CollectRequest) manager.TreeAnswer {
	g := r.group(req.Group)
	if g == nil {
		return manager.TreeAnswer{UnknownGroup: true}
	}
	if req.Wait > 0 && !g.done {
		_, _ = workflow.AwaitWithTimeout(ctx, req.Wait, func() bool { return g.done })
	}
	resp := &agenttypes.CollectResponse{Group: g.id, Done: g.done}
	for _, k := range g.kids {
		if k.ended || k.refused != "" || (g.done && !k.started) {
			resp.Results = append(resp.Results, k.result())
			continue
		}
		resp.Results = append(resp.Results, agenttypes.ChildResult{Label: k.task.Label, ID: k.id, Type: k.task.Type, Status: agenttypes.ChildRunning})
	}
	return manager.TreeAnswer{Collect: resp}
}

// cancelGroup cancels the children of a background group still running.
func (r *agentRun) cancelGroup(id string) manager.TreeAnswer {
	g := r.group(id)
	if g == nil {
		return manager.TreeAnswer{UnknownGroup: true}
	}
	g.cancel()
	return manager.TreeAnswer{}
}

func (r *agentRun) runningGroups() int {
	n := 0
	for _, g := range r.groups {
		if !g.done {
			n++
		}
	}
	return n
}

func (r *agentRun) group(id string) *group {
	for _, g := range r.groups {
		if g.id == id {
			return g
		}
	}
	return nil
}

// endGroups cancels the background groups still running when the run
// ends, and waits for them: a parent ends after its children, with what
// they spent.
func (r *agentRun) endGroups(ctx workflow.Context) {
	wait, _ := workflow.NewDisconnectedContext(ctx)
	for _, g := range r.groups {
		g.cancel()
	}
	_ = workflow.Await(wait, func() bool {
		for _, g := range r.groups {
			if !g.done {
				return false
			}
		}
		return true
	})
}

// newChildren checks a delegate request and makes its children.
func (r *agentRun) newChildren(ctx workflow.Context, req *agenttypes.DelegateRequest) ([]*child, int, error) {
	if req == nil {
		return nil, 0, errors.New("the call made no delegate request")
	}
	n := len(req.Tasks)
	switch {
	case n == 0 || n > agenttypes.MaxDelegateTasks:
		return nil, 0, fmt.Errorf("%d tasks; give 1 to %d", n, agenttypes.MaxDelegateTasks)
	case req.Background && r.in.Limits.MaxBackgroundGroups > 0 && r.runningGroups() >= r.in.Limits.MaxBackgroundGroups:
		return nil, 0, fmt.Errorf("agent %s has %d background groups running, the most it may; collect one first", r.sa.ID, r.runningGroups())
	case r.in.Limits.MaxChildren > 0 && r.spawned+n > r.in.Limits.MaxChildren:
		return nil, 0, fmt.Errorf("agent %s may spawn %d children over its run and has spawned %d; do the rest of the work itself", r.sa.ID, r.in.Limits.MaxChildren, r.spawned)
	}
	conc := req.Concurrency
	if conc <= 0 {
		conc = agenttypes.DefaultDelegateConcurrency
	}
	conc = min(conc, n, agenttypes.MaxDelegateConcurrency)
	kids := make([]*child, n)
	for i, task := range req.Tasks {
		if task.Label == "" {
			task.Label = fmt.Sprintf("task %d", i+1)
		}
		if task.Type == "" {
			task.Type = "explore"
		}
		switch {
		case utf8.RuneCountInString(task.Label) > maxLabel:
			return nil, 0, fmt.Errorf("task %d's label is longer than %d characters", i+1, maxLabel)
		case task.Resume != "" && !slices.Contains(r.endedKids, task.Resume):
			return nil, 0, fmt.Errorf("task %d resumes agent %s, which is not an ended child of this agent; on Temporal an agent resumes its own children", i+1, task.Resume)
		}
		kids[i] = &child{task: task}
	}
	if err := r.canDelegate(ctx, conc); err != nil {
		// As the manager says it: the first task is the one refused.
		return nil, 0, &taskRefusal{task: fmt.Sprintf("task 1 (%s)", kids[0].task.Label), err: err}
	}
	for _, k := range kids {
		k.id = newID(ctx)
	}
	r.spawned += n
	return kids, conc, nil
}

// minChildTokens is the fewest tokens a child is started with: the
// manager's default MinOutputTokens, the fewest a model call is made
// for.
const minChildTokens = 64

// canDelegate refuses a delegate call the agent has no budget left for,
// as the manager does, or that would take its subtree past its share of
// the tree's agents.
func (r *agentRun) canDelegate(ctx workflow.Context, conc int) error {
	b, spent, id := r.sa.Budget, r.sa.Spent, r.sa.ID
	switch {
	case b.MaxTokens > 0 && b.MaxTokens-spent.Usage.Total() < minChildTokens:
		return fmt.Errorf("agent %s has %d of its %d tokens left, too few for a child", id, max(b.MaxTokens-spent.Usage.Total(), 0), b.MaxTokens)
	case b.MaxToolCalls > 0 && b.MaxToolCalls-spent.ToolCalls <= 0:
		return fmt.Errorf("agent %s has used all %d of its tool calls", id, b.MaxToolCalls)
	case b.MaxCostUSD > 0 && b.MaxCostUSD-spent.Usage.CostUSD <= 0:
		return fmt.Errorf("agent %s has spent its $%g", id, b.MaxCostUSD)
	}
	if dl := r.deadline(ctx); !dl.IsZero() && !workflow.Now(ctx).Before(dl) {
		return fmt.Errorf("agent %s has used its time", id)
	}
	if n := r.in.Limits.TreeAgents; n > 0 && (n-1-r.treeHeld)/conc < 1 {
		return fmt.Errorf("agent %s's part of the tree may have %d agents alive at once, itself included: too few for %d children at once; delegate fewer at once, or do the work itself", id, n, conc)
	}
	return nil
}

// share is what a child starting now may have of the agent's budget: an
// equal part, for each of the slots still to fill, of what is neither
// spent nor held by running children; the time that is left; its own
// turns.
//
// The parent keeps a part too: of its tokens and dollars always (it
// answers its children's questions with its model), and of its tool
// calls beside a background group (it works on meanwhile).
func (r *agentRun) share(ctx workflow.Context, slots int, background bool) agenttypes.Budget {
	b, spent, held := r.sa.Budget, r.sa.Spent, r.held
	slots = max(slots, 1)
	callSlots := slots
	if background {
		callSlots++
	}
	var c agenttypes.Budget
	if b.MaxTokens > 0 {
		c.MaxTokens = max((b.MaxTokens-spent.Usage.Total()-held.MaxTokens)/(slots+1), 0)
	}
	if b.MaxToolCalls > 0 {
		c.MaxToolCalls = max((b.MaxToolCalls-spent.ToolCalls-held.MaxToolCalls)/callSlots, 0)
	}
	if b.MaxCostUSD > 0 {
		c.MaxCostUSD = max((b.MaxCostUSD-spent.Usage.CostUSD-held.MaxCostUSD)/float64(slots+1), 1e-9)
	}
	if dl := r.deadline(ctx); !dl.IsZero() {
		c.MaxTime = max(dl.Sub(workflow.Now(ctx)), 1)
	}
	return c
}

// addBudget adds sign times b's tokens, tool calls and cost to a.
func addBudget(a, b agenttypes.Budget, sign int) agenttypes.Budget {
	a.MaxTokens += sign * b.MaxTokens
	a.MaxToolCalls += sign * b.MaxToolCalls
	a.MaxCostUSD += float64(sign) * b.MaxCostUSD
	return a
}

// spawn starts a child's workflow.
func (r *agentRun) spawn(ctx workflow.Context, group string, k *child, conc int) {
	model := k.task.Model
	if model == "inherit" {
		model = ""
	}
	in := agentInput{
		Agent: manager.StepAgent{
			ID: k.id, ParentID: r.sa.ID, Type: k.task.Type, Label: k.task.Label, Model: model, ParentModel: r.model,
			Dir: r.sa.Dir, Task: k.task.Prompt, Tools: k.task.Tools, MaxDepth: r.sa.MaxDepth,
			Ancestors: append(slices.Clone(r.sa.Ancestors), manager.StepAncestor{Type: r.sa.Type, Tools: r.sa.Tools}),
			Budget:    k.task.Budget, MaxOutputTokens: k.task.MaxOutputTokens,
			Run: r.sa.Run, ParentWorkspace: cmp.Or(r.sa.Workspace, r.sa.ParentWorkspace),
		},
		Child: true, Group: group, Ceiling: k.ceiling, Limits: r.in.Limits, Checkout: r.in.Checkout, ResumeFrom: k.task.Resume,
	}
	if n := r.in.Limits.TreeAgents; n > 0 {
		// At most conc children of this call are alive at once, beside
		// those other groups hold.
		k.treeAgents = max((n-1-r.treeHeld)/conc, 1)
		in.Limits.TreeAgents = k.treeAgents
	}
	opts := workflow.ChildWorkflowOptions{
		WorkflowID:          k.id,
		ParentClosePolicy:   enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		WaitForCancellation: true,
	}
	k.future = workflow.ExecuteChildWorkflow(workflow.WithChildOptions(ctx, opts), WorkflowName, in)
}

// charge adds what an ended child spent to the agent's subtree, once.
func (r *agentRun) charge(k *child) {
	if k.charged {
		return
	}
	k.charged = true
	r.sa.Spent.Usage = r.sa.Spent.Usage.Add(k.out.Usage)
	r.sa.Spent.ToolCalls += k.out.SubtreeToolCalls
}

// result is a child's result as its parent's model reads it.
func (k *child) result() agenttypes.ChildResult {
	if k.final != nil {
		return *k.final
	}
	res := manager.Result{ID: k.id, Type: k.task.Type, Model: k.out.Model, State: k.out.End.State, Reason: k.out.End.Reason,
		Partial: k.out.End.Partial, Output: k.out.End.Output, Error: k.out.End.Error, Usage: k.out.Usage, OwnUsage: k.out.OwnUsage,
		ToolCalls: k.out.ToolCalls, Turns: k.out.Turns, TokensOverBudget: k.out.End.TokensOverBudget, Duration: k.out.Duration,
		Changes: k.out.Changes}
	var canceled *sdktemporal.CanceledError
	switch {
	case k.refused != "":
		res.State, res.Reason, res.Error = manager.Failed, manager.ReasonBudgetTokens, "not started: "+k.refused
		if !strings.Contains(k.refused, "tokens") {
			res.Reason = manager.ReasonBudgetToolCalls
		}
	case !k.started || errors.As(k.err, &canceled):
		res.State, res.Reason, res.Error = manager.Cancelled, manager.ReasonCancelled, "not started: its parent was stopped"
	case k.err != nil:
		res.State, res.Reason, res.Error = manager.Failed, manager.ReasonBackend, k.err.Error()
	}
	return manager.ChildResultOf(k.task.Label, res)
}

// kidRecord is a child the agent spawned, as merge finds it.
type kidRecord struct {
	ID, Label string
	Ended     bool
	Changes   *agenttypes.Changes `json:",omitempty"`
}

// kidEnded records k's end and its changes.
func (r *agentRun) kidEnded(k *child) {
	for i := range r.kids {
		if r.kids[i].ID == k.id {
			r.kids[i].Ended, r.kids[i].Changes = true, k.out.Changes
		}
	}
}

// childChanges answers the merge tool's ask for a child's changes, as the
// manager does: the child by ID, else the latest spawned with the label,
// once it has ended.
func (r *agentRun) childChanges(name string) manager.TreeAnswer {
	var found *kidRecord
	for i := range r.kids {
		switch {
		case r.kids[i].ID == name:
			found = &r.kids[i]
		case r.kids[i].Label == name && (found == nil || found.ID != name):
			found = &r.kids[i]
		}
	}
	switch {
	case found == nil:
		return manager.TreeAnswer{Refusal: fmt.Sprintf("%v: no child of agent %s is labelled or identified %q", manager.ErrNotFound, r.sa.ID, name)}
	case !found.Ended:
		return manager.TreeAnswer{Refusal: fmt.Sprintf("%v: child %q is still running; wait for it (collect with wait) before merging its changes", errDelegation, name)}
	}
	return manager.TreeAnswer{Changes: found.Changes}
}
