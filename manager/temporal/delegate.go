package temporal

import (
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/workflow"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
)

// maxLabel is the longest label a task may have, as in the manager.
const maxLabel = 32

// child is one task of a delegate call, as it runs.
type child struct {
	task    agenttypes.ChildTask
	id      string
	ceiling agenttypes.Budget
	future  workflow.ChildWorkflowFuture
	out     agentOutput
	err     error
	charged bool // what it spent is charged to its parent
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
		return nil, err
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
			held = addBudget(held, k.ceiling)
			r.spawn(ctx, resp.Group, k)
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
		kids[i] = &child{task: task, id: newID(ctx)}
	}
	r.spawned += n
	return kids, conc, nil
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
		c.MaxTokens = max((b.MaxTokens-spent.Usage.Total()-held.MaxTokens)/slots, 1)
	}
	if b.MaxToolCalls > 0 {
		c.MaxToolCalls = max((b.MaxToolCalls-spent.ToolCalls-held.MaxToolCalls)/slots, 1)
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
func (r *agentRun) spawn(ctx workflow.Context, group string, k *child) {
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
	switch {
	case !started:
		res.State, res.Reason, res.Error = manager.Cancelled, manager.ReasonCancelled, "not started: its parent was stopped"
	case k.err != nil:
		res.State, res.Reason, res.Error = manager.Failed, manager.ReasonBackend, k.err.Error()
	}
	return manager.ChildResultOf(k.task.Label, res)
}
