package manager

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/builtin/models/modelcap"
)

// The one step of a model call. The manager's loop, a type's own loop
// (through its Session) and a parent's calls on behalf of a child
// (answering its question, summarising for it) all go through generate,
// so the rules are written once: the turn and cost budgets, the tokens
// held for the call, what the budgets leave told to the model
// (modelcap.CallInfo), the call, the charge to the agent and its
// ancestors, and the event. No lock is held across the call.

// runStop is why a step ends the run: a budget used up, or a failure of
// the type's code or of a tool's host. A step that refuses returns one as
// its error, so errors.Is still finds ErrBudgetExceeded in it.
type runStop struct {
	reason Reason
	err    error
}

func (s *runStop) Error() string { return s.err.Error() }
func (s *runStop) Unwrap() error { return s.err }

// modelCall is what one call asks of the agent's model.
type modelCall struct {
	msgs  []llms.MessageContent
	input int      // the estimated input tokens: messages and tool definitions
	tools *toolset // the tools offered; nil: none
	// toolTokens is the part of input that the tool definitions take,
	// for the error that says a budget cannot pay for the call.
	toolTokens int
	// task is the agent's task as its caller gave it, when msgs are the
	// manager's loop's, whose last human message is that task as the
	// type's Prompt hook and inherited context dressed it; the model is
	// told it (modelcap.CallInfo).
	task string
	// maxOut is the call's own cap on output tokens; 0 leaves the agent's.
	maxOut int
	// reuse, when set, is what the calls of one loop, made one at a
	// time, reuse rather than allocate for each.
	reuse *callReuse
	// keepFinal leaves the event of an answer without tool calls to the
	// caller: the manager's loop stores a run's final answer once, in the
	// completed event, and knows only after parsing it whether it is one.
	keepFinal bool
}

// callReuse holds a loop's call options: the calls of the manager's loop
// are made one at a time, and a model reads its options during the call.
type callReuse struct {
	opts   [3]llms.CallOption
	maxOut int
	setMax llms.CallOption // sets MaxTokens to maxOut
}

// withMaxTokens is llms.WithMaxTokens(n), made once per loop; a nil r
// makes a new one.
func (r *callReuse) withMaxTokens(n int) llms.CallOption {
	if r == nil {
		return llms.WithMaxTokens(n)
	}
	if r.setMax == nil {
		r.setMax = func(o *llms.CallOptions) { o.MaxTokens = r.maxOut }
	}
	r.maxOut = n
	return r.setMax
}

// modelReply is a call's answer and what it cost.
type modelReply struct {
	choice *llms.ContentChoice
	usage  Usage
	turn   int
	// limit is the tightest token budget of the agent's chain once the
	// call was charged; crossed the budget this call's own tokens took
	// past its limit, if any (another call may have crossed it before).
	limit, crossed treeLimit
	// past, when set, is the budget (tokens or cost) of the chain the run
	// is past once this call was charged: the answer is spent and kept,
	// and no further call may be made, so the tool calls it asks for are
	// not run.
	past *runStop
}

// generate makes one model call of a: refused when a turn, cost or token
// budget of a or an ancestor is used up (a *runStop), cut to the output
// its budgets allow, counted and charged in the same step as the tightest
// budget is read, and reported. An error is the context's, the model's, or
// a refusal.
func (a *Agent) generate(ctx context.Context, c modelCall) (modelReply, error) {
	if err := ctx.Err(); err != nil {
		return modelReply{}, err
	}
	if stop := a.spent(); stop != nil {
		return modelReply{}, stop
	}
	maxOut := a.maxOutput
	if c.maxOut > 0 && (maxOut == 0 || c.maxOut < maxOut) {
		maxOut = c.maxOut
	}
	maxOut, held, t, err := a.reserveCall(ctx, c.input, maxOut)
	if err != nil {
		return modelReply{}, err
	}
	if !held.ok {
		return modelReply{}, &runStop{reason: t.reason(), err: t.refusal(a, c)}
	}
	// Released once the call is charged, so the next reservation sees it.
	defer held.release()
	turn, ok := a.takeTurn()
	if !ok {
		return modelReply{}, a.turnStop()
	}
	var opts []llms.CallOption
	if c.reuse != nil {
		opts = c.reuse.opts[:0]
	} else {
		opts = make([]llms.CallOption, 0, 3)
	}
	if c.tools != nil && c.tools.offer != nil {
		opts = append(opts, c.tools.offer)
	}
	if maxOut > 0 {
		opts = append(opts, c.reuse.withMaxTokens(maxOut))
	}
	if a.m.cfg.Stream {
		opts = append(opts, llms.WithStreamingFunc(a.streamTo(turn)))
	}
	info := modelcap.CallInfo{Task: c.task, Turns: modelcap.Unlimited, ToolCalls: a.toolCallsLeft()}
	if a.budget.MaxTurns > 0 {
		info.Turns = a.budget.MaxTurns - turn + 1
	}
	callCtx, span := a.m.tel.startChat(ctx, a, &c, maxOut)
	resp, err := a.callModel(modelcap.WithCall(callCtx, info), c.msgs, opts)
	r, err := a.reply(ctx, c, resp, err, turn, &held)
	a.m.tel.endChat(callCtx, span, &r, err)
	if err != nil {
		return r, err
	}
	r.limit, r.crossed = a.chargeCall(r.usage, &held)
	switch x := a.costSpent(); {
	case r.limit.agent != nil && r.limit.left < 0:
		r.past = &runStop{reason: ReasonBudgetTokens, err: r.limit.err(a)}
	case x != nil:
		r.past = &runStop{reason: ReasonBudgetCost, err: costBudgetError(a, x)}
	}
	if !c.keepFinal || len(r.choice.ToolCalls) > 0 {
		a.emit(&Event{Kind: EventModelCall, Turn: turn, Usage: r.usage, Text: r.choice.Content})
	}
	return r, nil
}

// reply is a model call's answer, or its error: a call cut off in flight
// is charged the input it was sent, estimated and said to be.
func (a *Agent) reply(ctx context.Context, c modelCall, resp *llms.ContentResponse, err error, turn int, held *holding) (modelReply, error) {
	if err != nil {
		if ctx.Err() != nil {
			a.chargeCall(Usage{InputTokens: c.input, Estimated: true}, held)
		}
		return modelReply{turn: turn}, fmt.Errorf("model %s: %w", a.modelName, err)
	}
	if resp == nil || len(resp.Choices) == 0 || resp.Choices[0] == nil {
		return modelReply{turn: turn}, fmt.Errorf("model %s returned no choices", a.modelName)
	}
	r := modelReply{choice: resp.Choices[0], turn: turn}
	r.usage = usageOf(r.choice, c.input)
	return r, nil
}

// spent refuses a call when a's turns, or the cost budget of a or an
// ancestor, are used up.
func (a *Agent) spent() *runStop {
	a.mu.Lock()
	turns := a.turns
	a.mu.Unlock()
	if a.budget.MaxTurns > 0 && turns >= a.budget.MaxTurns {
		return a.turnStop()
	}
	if x := a.costSpent(); x != nil {
		return &runStop{reason: ReasonBudgetCost, err: costBudgetError(a, x)}
	}
	return nil
}

func (a *Agent) turnStop() *runStop {
	return &runStop{reason: ReasonBudgetTurns, err: fmt.Errorf("%w: turn budget of %d used up", ErrBudgetExceeded, a.budget.MaxTurns)}
}

// takeTurn counts a call as one of a's turns, unless its turn budget is
// used up: checking and counting are one step, so calls made at once (a
// parent answering two children) cannot pass it together.
func (a *Agent) takeTurn() (int, bool) {
	a.mu.Lock()
	if a.budget.MaxTurns > 0 && a.turns >= a.budget.MaxTurns {
		a.mu.Unlock()
		return 0, false
	}
	a.turns++
	turn := a.turns
	a.mu.Unlock()
	a.m.turns.Add(1)
	return turn, true
}

// callModel calls a's model, its panic recovered into an error that keeps
// the stack.
func (a *Agent) callModel(ctx context.Context, msgs []llms.MessageContent, opts []llms.CallOption) (resp *llms.ContentResponse, err error) {
	defer func() {
		if p := recover(); p != nil {
			stack := string(debug.Stack())
			a.logger().Error("model panicked", "panic", p, "stack", stack)
			err = &PanicError{Value: p, Stack: stack}
		}
	}()
	return a.model.GenerateContent(ctx, msgs, opts...)
}

// streamTo publishes the chunks of turn's streamed text to subscribers.
func (a *Agent) streamTo(turn int) func(context.Context, []byte) error {
	return func(_ context.Context, chunk []byte) error {
		if len(chunk) == 0 || !a.m.events.active() {
			return nil
		}
		e := Event{Kind: EventModelDelta, Time: a.m.cfg.now(), AgentID: a.id, ParentID: a.parentID, Type: a.typ.Name, Turn: turn, Text: string(chunk)}
		a.m.events.publish(&e)
		return nil
	}
}

// chargeCall adds a call's usage to a and every ancestor and, in the same
// step, reads the token budgets of the chain: limit is the tightest, and
// crossed the one this call's tokens took past its limit (nil agent:
// none). Two calls charged at once cannot both be blamed for one
// overshoot: only the one that crossed the limit is. What the call held
// is given back in the same step.
func (a *Agent) chargeCall(u Usage, held *holding) (limit, crossed treeLimit) {
	a.root.budgetMu.Lock()
	a.charge(u)
	held.releaseLocked() // in the same step, so the next reservation sees both
	a.tokenBudgets(func(x *Agent, left int) {
		limit.tighter(x, left)
		if left < 0 && left+u.Total() >= 0 && (crossed.agent == nil || left < crossed.left) {
			crossed = treeLimit{agent: x, left: left, limit: x.budget.MaxTokens}
		}
	})
	a.root.budgetMu.Unlock()
	a.m.inTokens.Add(int64(u.InputTokens))
	a.m.outTokens.Add(int64(u.OutputTokens))
	if nano := int64(u.CostUSD * 1e9); nano != 0 {
		a.m.costNanoUSD.Add(nano) // a counter every agent writes: not for nothing
	}
	return limit, crossed
}
