package temporal

import (
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
// concurrency at once, and returns their results in task order. Each
// child's budget is at most an equal share of what the agent has left
// when it starts, held until it ends and then charged what it spent, so
// children running at once cannot spend more than their parent has. An
// error is a refusal, which the delegate tool reports to the model.
func (r *agentRun) delegate(ctx workflow.Context, tc manager.TreeCall) (*agenttypes.DelegateResponse, error) {
	kids, conc, err := r.newChildren(ctx, tc.Delegate)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errDelegation, err)
	}
	resp := &agenttypes.DelegateResponse{Group: newID(ctx)}
	for _, k := range kids {
		resp.Children = append(resp.Children, agenttypes.ChildRef{Label: k.task.Label, ID: k.id})
	}
	// Children are waited for on a context that outlives a cancel, so
	// that a cancelled parent still ends after them with what they spent.
	wait, _ := workflow.NewDisconnectedContext(ctx)
	sel := workflow.NewSelector(wait)
	running, next := 0, 0
	var held agenttypes.Budget
	for done := 0; done < len(kids); {
		for running < conc && next < len(kids) && ctx.Err() == nil {
			k := kids[next]
			next++
			k.ceiling = r.share(ctx, held, conc-running)
			if why := tooLittle(k.ceiling, r.sa.Budget); why != "" {
				k.refused = why
				continue
			}
			held = addBudget(held, k.ceiling)
			r.spawn(ctx, resp.Group, k, conc)
			running++
			sel.AddFuture(k.future, func(f workflow.Future) { k.err = f.Get(wait, &k.out) })
		}
		if running == 0 {
			break // cancelled before the rest started
		}
		sel.Select(wait)
		running--
		done++
		held = agenttypes.Budget{}
		for _, k := range kids[:next] {
			if k.err != nil || k.out.End.State.Terminal() {
				r.charge(k)
			} else {
				held = addBudget(held, k.ceiling)
			}
		}
	}
	for i, k := range kids {
		resp.Results = append(resp.Results, k.result(i < next))
	}
	return resp, nil
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
	case req.Background:
		return nil, 0, errors.New("background delegation is not offered on the Temporal backend yet; delegate without background, and the results come back at once")
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
		case task.Resume != "":
			return nil, 0, fmt.Errorf("task %d resumes an agent, which the Temporal backend does not offer yet; give it a fresh task", i+1)
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
	if n := r.in.Limits.TreeAgents; n > 0 && (n-1)/conc < 1 {
		return fmt.Errorf("agent %s's part of the tree may have %d agents alive at once, itself included: too few for %d children at once; delegate fewer at once, or do the work itself", id, n, conc)
	}
	return nil
}

// share is what a child starting now may have of the agent's budget: an
// equal part, for each of the slots still to fill, of what is neither
// spent nor held by running children; the time that is left; its own
// turns.
func (r *agentRun) share(ctx workflow.Context, held agenttypes.Budget, slots int) agenttypes.Budget {
	b, spent := r.sa.Budget, r.sa.Spent
	slots = max(slots, 1)
	var c agenttypes.Budget
	if b.MaxTokens > 0 {
		c.MaxTokens = max((b.MaxTokens-spent.Usage.Total()-held.MaxTokens)/slots, 0)
	}
	if b.MaxToolCalls > 0 {
		c.MaxToolCalls = max((b.MaxToolCalls-spent.ToolCalls-held.MaxToolCalls)/slots, 0)
	}
	if b.MaxCostUSD > 0 {
		c.MaxCostUSD = max((b.MaxCostUSD-spent.Usage.CostUSD-held.MaxCostUSD)/float64(slots), 1e-9)
	}
	if dl := r.deadline(ctx); !dl.IsZero() {
		c.MaxTime = max(dl.Sub(workflow.Now(ctx)), 1)
	}
	return c
}

func addBudget(a, b agenttypes.Budget) agenttypes.Budget {
	a.MaxTokens += b.MaxTokens
	a.MaxToolCalls += b.MaxToolCalls
	a.MaxCostUSD += b.MaxCostUSD
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
		},
		Child: true, Group: group, Ceiling: k.ceiling, Limits: r.in.Limits, Checkout: r.in.Checkout,
	}
	if n := r.in.Limits.TreeAgents; n > 0 {
		in.Limits.TreeAgents = (n - 1) / conc // at most conc children are alive at once
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
func (k *child) result(started bool) agenttypes.ChildResult {
	res := manager.Result{ID: k.id, Type: k.task.Type, Model: k.out.Model, State: k.out.End.State, Reason: k.out.End.Reason,
		Partial: k.out.End.Partial, Output: k.out.End.Output, Error: k.out.End.Error, Usage: k.out.Usage, OwnUsage: k.out.OwnUsage,
		ToolCalls: k.out.ToolCalls, Turns: k.out.Turns, TokensOverBudget: k.out.End.TokensOverBudget, Duration: k.out.Duration}
	var canceled *sdktemporal.CanceledError
	switch {
	case k.refused != "":
		res.State, res.Reason, res.Error = manager.Failed, manager.ReasonBudgetTokens, "not started: "+k.refused
		if !strings.Contains(k.refused, "tokens") {
			res.Reason = manager.ReasonBudgetToolCalls
		}
	case !started || errors.As(k.err, &canceled):
		res.State, res.Reason, res.Error = manager.Cancelled, manager.ReasonCancelled, "not started: its parent was stopped"
	case k.err != nil:
		res.State, res.Reason, res.Error = manager.Failed, manager.ReasonBackend, k.err.Error()
	}
	return manager.ChildResultOf(k.task.Label, res)
}
