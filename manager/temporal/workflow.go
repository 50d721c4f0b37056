package temporal

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/tmc/langchaingo/llms"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/stepwire"
)

// The agent workflow is the manager's loop, made durable: the
// conversation, the budgets and what the subtree spent live in the
// workflow, and each step (the start, a model call, a turn's tool calls,
// the final answer) is an activity that a worker's manager runs with the
// loop's own code (manager.StepAgent). Children are child workflows.
// Everything here is replay-safe: time is workflow.Now, IDs come from
// SideEffect, and nothing iterates a map. The events of a run are not
// kept here: each step's are in its result, in the workflow's history,
// where the client's follower reads them (follow.go).

// agentRun is one agent workflow's state.
type agentRun struct {
	in      agentInput
	sa      manager.StepAgent
	own     agenttypes.Usage
	msgs    []stepwire.Message
	timeUp  bool
	spawned int // children spawned over the run
	asked   int // questions asked of its parent
	// endedKids are its children that have ended, which a task may resume.
	endedKids []string
	groups    []*group
	// held is what the children running now may still spend: their
	// budgets' tokens, tool calls and cost, not yet charged.
	held agenttypes.Budget
	// treeHeld is the shares of the tree's agents its running children's
	// subtrees hold.
	treeHeld int
	calls    int // its own tool calls
	model    string
	// started is when the agent's first workflow run started; turnsHere
	// counts the turns of this workflow run.
	started   time.Time
	turnsHere int
	// calling says a call of the agent's model is under way (its loop's,
	// or an answer to a child): one at a time, so that each sees what
	// the other spent.
	calling bool
	// turnMsg is the model's message of the turn whose tree calls are under
	// way: part of the conversation a child's question is answered with,
	// as in process.
	turnMsg []stepwire.Message
	// changes are what its workspace recorded when it was closed.
	changes *agenttypes.Changes
	// kids are the children it spawned, for merge to find.
	kids []kidRecord
	// startLost says its start step failed or was given up: a workspace
	// it opened may be open with no handle here, and is found to close.
	startLost bool
}

// modelStep runs a step that calls the agent's model, after any other
// such step under way.
func (r *agentRun) modelStep(ctx workflow.Context, name string, in stepwire.Input, out any) error {
	if err := workflow.Await(ctx, func() bool { return !r.calling }); err != nil {
		return err
	}
	r.calling = true
	defer func() { r.calling = false }()
	return r.step(ctx, name, long, in, out)
}

func agentWorkflow(ctx workflow.Context, in agentInput) (agentOutput, error) {
	r := &agentRun{in: in, sa: in.Agent, started: workflow.GetInfo(ctx).WorkflowStartTime}
	if c := in.Carried; c != nil {
		r.restore(c)
	}
	end, next := r.run(ctx)
	if next != nil {
		return agentOutput{}, workflow.NewContinueAsNewError(ctx, WorkflowName, *next)
	}
	r.endGroups(ctx)
	end = r.closeWorkspace(ctx, end)
	out := r.finish(end)
	out.Duration = workflow.Now(ctx).Sub(r.started)
	return out, nil
}

// run runs the loop and returns how it ended, or, when the workflow's
// history has grown long between two turns, the input to go on with in
// a new workflow run (ContinueAsNew).
func (r *agentRun) run(ctx workflow.Context) (manager.StepEnd, *agentInput) {
	ctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	workflow.Go(ctx, r.serveQuestions)
	// The clock runs from the workflow's start: the time budget bounds
	// the wait for a worker too. A child's own budget is known once its
	// type is, from the start step: its parent's ceiling bounds the
	// start itself.
	r.startClock(ctx, cancel)
	if r.in.Carried == nil {
		if end, ok := r.start(ctx, cancel); !ok {
			return end, nil
		}
	}
	for {
		if ctx.Err() != nil {
			return r.stopped(), nil
		}
		if r.historyLong(ctx) {
			return manager.StepEnd{}, r.carry(ctx)
		}
		end, done := r.turn(ctx)
		r.turnsHere++
		if done {
			return end, nil
		}
	}
}

// start is the run's start step; false means the run ended.
func (r *agentRun) start(ctx workflow.Context, cancel workflow.CancelFunc) (manager.StepEnd, bool) {
	var st stepwire.StartOut
	if err := r.step(ctx, stepwire.StepStart, long, stepwire.Input{}, &st); err != nil {
		r.startLost = true
		return r.failed(ctx, manager.ReasonBackend, err), false
	}
	r.model, r.sa.Model = st.Model, st.Model
	r.sa.Workspace = st.Workspace // closed when the run ends, however it ends
	if r.in.Child {
		r.sa.Budget = r.sa.Budget.Merge(st.TypeBudget).Within(r.in.Ceiling)
		if r.sa.Budget.MaxTime != r.in.Ceiling.MaxTime {
			r.startClock(ctx, cancel) // its type's time budget is the tighter
		}
	}
	if st.End != nil {
		return *st.End, false
	}
	r.msgs = st.Messages
	if r.in.ResumeFrom != "" {
		if err := r.resume(ctx); err != nil {
			return r.failed(ctx, manager.ReasonBackend, err), false
		}
	}
	return manager.StepEnd{}, true
}

// turn is one model call and what follows it; done says the run ended.
func (r *agentRun) turn(ctx workflow.Context) (manager.StepEnd, bool) {
	var ms stepwire.GenerateOut
	if err := r.modelStep(ctx, stepwire.StepGenerate, stepwire.Input{Messages: r.msgs}, &ms); err != nil {
		return r.failed(ctx, manager.ReasonModelError, err), true
	}
	r.sa.Spent.Usage = r.sa.Spent.Usage.Add(ms.Usage)
	r.own = r.own.Add(ms.Usage)
	r.sa.Spent.Turns = max(r.sa.Spent.Turns, ms.Turn)
	if ms.End != nil {
		return *ms.End, true
	}
	if ms.Choice.Content != "" {
		r.sa.LastText = ms.Choice.Content
	}
	if ctx.Err() != nil {
		return r.stopped(), true
	}
	if len(ms.Choice.Calls) == 0 {
		var as stepwire.AnswerOut
		if err := r.step(ctx, stepwire.StepAnswer, short, stepwire.Input{Reply: &ms}, &as); err != nil {
			return r.failed(ctx, manager.ReasonBackend, err), true
		}
		if as.End != nil {
			return *as.End, true
		}
		r.sa.Retried = true
		r.msgs = append(r.msgs, as.Retry...)
		return manager.StepEnd{}, false
	}
	return r.tools(ctx, ms.Choice)
}

// tools runs one turn's tool calls: the worker runs the tools, and the
// workflow the calls that act on the tree.
func (r *agentRun) tools(ctx workflow.Context, choice *stepwire.Choice) (manager.StepEnd, bool) {
	var ts stepwire.ToolsOut
	if err := r.step(ctx, stepwire.StepTools, long, stepwire.Input{Reply: &stepwire.GenerateOut{Choice: choice}}, &ts); err != nil {
		return r.failed(ctx, manager.ReasonBackend, err), true
	}
	r.sa.Spent.ToolCalls += ts.Counted
	r.calls += ts.Counted
	r.sa.Notes = ts.Notes
	if ts.End != nil {
		r.msgs = append(r.msgs, ts.Messages...)
		return *ts.End, true
	}
	if len(ts.Messages) > 0 {
		r.turnMsg = ts.Messages[:1]
		defer func() { r.turnMsg = nil }()
	}
	for _, tc := range ts.Tree {
		if tc.Index < 0 || tc.Index >= len(choice.Calls) || 1+tc.Index >= len(ts.Messages) {
			return r.failed(ctx, manager.ReasonBackend, fmt.Errorf("tree call %q is not one of the turn's", tc.CallID)), true
		}
		call := choice.Calls[tc.Index]
		text, err := r.treeCall(ctx, call, tc)
		if ctx.Err() != nil {
			return r.stopped(), true
		}
		if err != nil {
			return r.failed(ctx, manager.ReasonBackend, err), true
		}
		ts.Messages[1+tc.Index] = stepwire.Message{Role: llms.ChatMessageTypeTool,
			Parts: []stepwire.Part{{Result: &stepwire.ToolCall{ID: call.ID, Name: call.Name, Args: text}}}}
	}
	r.msgs = append(r.msgs, ts.Messages...)
	return manager.StepEnd{}, false
}

// treeCall does what a tool call asks of the tree, one act at a time
// (a collect may cancel its group, then collect it), and returns the
// tool's result text.
func (r *agentRun) treeCall(ctx workflow.Context, call stepwire.ToolCall, tc manager.TreeCall) (string, error) {
	var answers []manager.TreeAnswer
	for range 4 { // a tool makes one act, or two; more is a bug
		answers = append(answers, r.act(ctx, tc))
		var out stepwire.TreeOut
		if err := r.step(ctx, stepwire.StepTree, short, stepwire.Input{Call: &call, Answers: answers}, &out); err != nil {
			return "", err
		}
		if out.Next == nil {
			return out.Text, nil
		}
		tc = *out.Next
	}
	return "", fmt.Errorf("tool call %s acted on the tree more than 4 times", call.ID)
}

// act does one act on the tree.
func (r *agentRun) act(ctx workflow.Context, tc manager.TreeCall) manager.TreeAnswer {
	switch {
	case tc.Delegate != nil:
		resp, err := r.delegate(ctx, tc)
		if err != nil {
			var tr *taskRefusal
			if errors.As(err, &tr) {
				err = tr // as the manager words it, without the generic prefix
			}
			return manager.TreeAnswer{Refusal: err.Error()}
		}
		return manager.TreeAnswer{Delegate: resp}
	case tc.Collect != nil:
		return r.collect(ctx, tc.Collect)
	case tc.CancelGroup != "":
		return r.cancelGroup(tc.CancelGroup)
	case tc.Ask != nil:
		return r.ask(ctx, tc.Ask)
	case tc.ChildChanges != "":
		return r.childChanges(tc.ChildChanges)
	}
	return manager.TreeAnswer{Refusal: "delegation refused: the tool asked the tree for nothing it knows"}
}

// startClock ends the run when its time budget is used up, from the
// moment it started.
func (r *agentRun) startClock(ctx workflow.Context, cancel workflow.CancelFunc) {
	dl := r.deadline(ctx)
	if dl.IsZero() {
		return
	}
	d := dl.Sub(workflow.Now(ctx))
	if d <= 0 {
		r.timeUp = true
		cancel()
		return
	}
	workflow.Go(ctx, func(ctx workflow.Context) {
		if err := workflow.NewTimer(ctx, d).Get(ctx, nil); err == nil {
			r.timeUp = true
			cancel()
		}
	})
}

// deadline is when the time budget runs out; zero without one.
func (r *agentRun) deadline(ctx workflow.Context) time.Time {
	budget := r.sa.Budget.MaxTime
	if c := r.in.Ceiling.MaxTime; r.in.Child && c > 0 && (budget <= 0 || c < budget) {
		budget = c // a child's own budget may not be clamped yet
	}
	if budget <= 0 {
		return time.Time{}
	}
	return r.started.Add(budget)
}

// stopped is the end of a run stopped between steps.
func (r *agentRun) stopped() manager.StepEnd {
	return manager.StoppedEnd(r.sa, r.timeUp)
}

// failed is the end of a run whose step failed for good: stopped, when
// the failure is the run's context ending.
func (r *agentRun) failed(ctx workflow.Context, reason manager.Reason, err error) manager.StepEnd {
	var canceled *sdktemporal.CanceledError
	if ctx.Err() != nil || errors.As(err, &canceled) {
		return r.stopped()
	}
	var app *sdktemporal.ApplicationError
	msg := err.Error()
	if errors.As(err, &app) {
		msg = app.Message()
		if app.Type() == errTypeWorker {
			reason = manager.ReasonBackend
		}
	}
	end := manager.StoppedEnd(r.sa, false)
	end.State, end.Reason, end.Error = manager.Failed, reason, msg
	return end
}

// finish is the run's output.
func (r *agentRun) finish(end manager.StepEnd) agentOutput {
	return agentOutput{End: end, Model: r.model, Usage: r.sa.Spent.Usage, OwnUsage: r.own,
		ToolCalls: r.calls, SubtreeToolCalls: r.sa.Spent.ToolCalls, Turns: r.sa.Spent.Turns, Changes: r.changes}
}

// closeWorkspace records the ended agent's workspace on its branch, as
// the manager does however an agent ends: on a context a cancel does not
// reach, so partial work is kept. A completed run whose work could not
// be recorded fails with ReasonWorkspace, as in process.
func (r *agentRun) closeWorkspace(ctx workflow.Context, end manager.StepEnd) manager.StepEnd {
	if r.sa.Workspace == "" && !r.startLost {
		return end
	}
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	var out stepwire.CloseOut
	err := r.step(ctx, stepwire.StepCloseWorkspace, closing, stepwire.Input{}, &out)
	r.changes = out.Changes
	if err != nil {
		out.Error = errorText(err)
	}
	if out.Error != "" && end.State == manager.Completed {
		end.State, end.Reason, end.Error = manager.Failed, manager.ReasonWorkspace, out.Error
	}
	return end
}

// errorText is an activity's error as its step wrote it.
func errorText(err error) string {
	var app *sdktemporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message()
	}
	return err.Error()
}

// newID is a new agent ID, the same on every replay.
func newID(ctx workflow.Context) string {
	var id string
	_ = workflow.SideEffect(ctx, func(workflow.Context) any { return uuid.NewString() }).Get(&id)
	return id
}
