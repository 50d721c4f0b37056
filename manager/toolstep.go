package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
)

// The one step of a turn's tool calls, for the manager's loop and a
// type's own loop alike: a call to a tool the agent may not use is
// refused and costs nothing, and so is one the type's BeforeTool hook
// vetoes; of the others, as many as the tool-call budgets of the agent
// and its ancestors still allow run, in call order, several at once; each
// result, errors included, is cut to what the model may be given; and a
// failure the model cannot work around (a panic, a crashed script, a
// plugin that exited) ends the run.

// maxToolError is how much of a tool's error the model is given: its
// beginning and its end, which say what failed and why.
const maxToolError = 4 << 10

// toolOutcome is how one call went.
type toolOutcome struct {
	name    string
	text    string // what goes back to the model: the tool's text or "error: …", cut
	err     error  // the tool's own error
	refused bool   // not run: not the agent's tool, or vetoed
}

// runToolCalls runs calls through the tool-call step and returns their
// outcomes in call order. stop, when set, ends the run: outcomes is nil
// when it ended before any call ran (a failed hook), and a stop with no
// reason means the run's context ended.
func (a *Agent) runToolCalls(ctx context.Context, calls []llms.ToolCall) (outcomes []toolOutcome, stop *runStop) {
	return a.runToolCallsIn(ctx, calls, nil)
}

// toolScratch is what the turns of one loop, run one at a time, reuse.
type toolScratch struct {
	outcomes []toolOutcome
	run      []int
	// late starts the helpers of the turn in batch (helpLater); made at
	// the loop's first turn of several calls. spare is the last turn's
	// batch, for the next to reuse: kept only when no helper took it.
	late  *time.Timer
	batch atomic.Pointer[toolBatch]
	spare *toolBatch
}

// runToolCallsIn is runToolCalls with its slices taken from scratch (nil:
// made anew); the outcomes are then good until the next turn.
func (a *Agent) runToolCallsIn(ctx context.Context, calls []llms.ToolCall, scratch *toolScratch) (outcomes []toolOutcome, stop *runStop) {
	var run []int
	if scratch != nil {
		outcomes = append(scratch.outcomes[:0], make([]toolOutcome, len(calls))...)
		run = scratch.run[:0]
		defer func() { scratch.outcomes, scratch.run = outcomes[:0], run[:0] }()
	} else {
		outcomes = make([]toolOutcome, len(calls))
		run = make([]int, 0, len(calls))
	}
	for i, c := range calls {
		name := ""
		if c.FunctionCall != nil {
			name = c.FunctionCall.Name
		}
		if _, ok := a.tools.byName[name]; !ok {
			outcomes[i] = a.refuseTool(c, name)
			continue
		}
		veto, stop := a.beforeTool(ctx, c, name)
		if stop != nil {
			return nil, stop
		}
		if veto != nil {
			outcomes[i] = *veto
			continue
		}
		run = append(run, i)
	}
	took, limit := a.takeToolCalls(len(run))
	for _, i := range run[took:] {
		outcomes[i] = toolOutcome{name: calls[i].FunctionCall.Name, text: "error: not run: the tool-call budget is used up", refused: true}
	}
	a.executeTools(ctx, calls, run[:took], outcomes, scratch)
	for _, i := range run[:took] {
		if stop := classifyToolFailure(outcomes[i]); stop != nil {
			return outcomes, stop
		}
	}
	if err := ctx.Err(); err != nil {
		return outcomes, &runStop{err: err}
	}
	if took < len(run) {
		return outcomes, &runStop{reason: ReasonBudgetToolCalls,
			err: fmt.Errorf("%w: tool call budget%s of %d used up", ErrBudgetExceeded, a.whose(limit.agent), limit.limit)}
	}
	return outcomes, nil
}

// classifyToolFailure says whether a call's failure ends the run: a tool
// that panicked, a script that crashed or a plugin that exited leave the
// model nothing to work around.
func classifyToolFailure(o toolOutcome) *runStop {
	switch err := o.err; {
	case errors.Is(err, ErrToolPanic):
		return &runStop{reason: ReasonToolPanic, err: err}
	case errors.Is(err, agenttypes.ErrScript):
		return &runStop{reason: ReasonScript, err: fmt.Errorf("script tool %s: %w", o.name, err)}
	case errors.Is(err, agenttypes.ErrPluginExited):
		return &runStop{reason: ReasonPluginExited, err: fmt.Errorf("tool %s: %w", o.name, err)}
	}
	return nil
}

// executeTools runs the calls at the indexes in run, several at once up
// to ToolConcurrency, and puts each outcome at its call's index. The
// agent's goroutine runs calls itself, taking them in order with up to
// ToolConcurrency-1 helpers, which start only once the turn's calls have
// run for m.helperDelay: calls that take long leave the next ones to the
// helpers, and a turn of fast calls (a read, a lookup) costs no goroutine
// started and no thread woken. A tool that waits on other agents lends
// the agent's slot meanwhile.
func (a *Agent) executeTools(ctx context.Context, calls []llms.ToolCall, run []int, out []toolOutcome, scratch *toolScratch) {
	if len(run) == 0 {
		return
	}
	a.m.enterTools(a)
	defer a.m.leaveTools(a)
	if len(run) == 1 || a.m.cfg.ToolConcurrency == 1 {
		for _, i := range run {
			out[i] = a.runTool(ctx, calls[i])
		}
		return
	}
	b := scratch.takeBatch()
	b.a, b.ctx, b.calls, b.run, b.out = a, ctx, calls, run, out
	b.helpers = min(len(run), a.m.cfg.ToolConcurrency) - 1
	b.wg.Add(len(run))
	late := b.helpLater(scratch)
	finished := false
	defer func() {
		late.Stop()
		// Nothing left to take, for helpers that started, when a call
		// panicked past invoke's recover and the run is ending.
		b.next.Store(int32(len(b.run)))
		scratch.endTurn(b, finished)
	}()
	b.work()
	b.wg.Wait()
	finished = true
}

// takeBatch returns an empty batch: the last turn's if s kept it, else a
// new one (s may be nil).
func (s *toolScratch) takeBatch() *toolBatch {
	if s == nil || s.spare == nil {
		return new(toolBatch)
	}
	b := s.spare
	s.spare = nil
	b.next.Store(0)
	return b
}

// endTurn takes b, whose turn ended (finished: every call ran), from
// where helpers find it, and keeps it for the next turn if no helper
// took it: one that did may still hold it, about to find nothing left.
// s may be nil.
func (s *toolScratch) endTurn(b *toolBatch, finished bool) {
	if s != nil && s.batch.Swap(nil) == b && finished {
		s.spare = b
	}
}

// helperDelay is how long a turn's calls run on the agent's goroutine
// alone before helpers start to take the calls not yet begun. A
// goroutine started and a thread woken cost more than a fast tool's call;
// a slow call (a search, a child, a request) takes far longer than this.
const helperDelay = 100 * time.Microsecond

// toolBatch is one turn's calls, taken in order by whoever is free.
type toolBatch struct {
	a     *Agent
	ctx   context.Context
	calls []llms.ToolCall
	run   []int
	out   []toolOutcome
	next  atomic.Int32   // the next index of run to take
	wg    sync.WaitGroup // one for each call, done once it has run
	// helpers is how many goroutines help the agent's once the calls
	// take long.
	helpers int
}

// helpLater starts b's helpers once its calls have run for the
// manager's helperDelay, and returns the timer that does, to be stopped
// once the agent's goroutine has taken every call. A loop's turns come
// one at a time, so they share one timer, kept in scratch (nil: a timer
// of b's own). A start takes the batch it helps, so that each is helped
// once, and ToolConcurrency holds: one that comes late, after b's calls
// were all taken, finds the next turn's batch or none, and helps that
// (early) or nothing, and the next turn's own start then finds none.
func (b *toolBatch) helpLater(scratch *toolScratch) *time.Timer {
	d := b.a.m.helperDelay
	if scratch == nil {
		return time.AfterFunc(d, b.help)
	}
	scratch.batch.Store(b)
	if scratch.late == nil {
		scratch.late = time.AfterFunc(d, scratch.helpTurn)
	} else {
		scratch.late.Reset(d)
	}
	return scratch.late
}

// helpTurn is run by the loop's timer: it takes the turn's batch, if a
// turn is still running, and helps it.
func (s *toolScratch) helpTurn() {
	if b := s.batch.Swap(nil); b != nil {
		b.help()
	}
}

// help is run by b's timer, on a goroutine of the timer's own: the first
// helper, which starts the others.
func (b *toolBatch) help() {
	for range b.helpers - 1 {
		go b.work()
	}
	b.work()
}

// work runs calls until none is left. Only a call taken is waited for:
// a helper that finds none left touches nothing the turn owns.
func (b *toolBatch) work() {
	for {
		k := int(b.next.Add(1)) - 1
		if k >= len(b.run) {
			return
		}
		i := b.run[k]
		b.out[i] = b.a.runTool(b.ctx, b.calls[i])
		b.wg.Done()
	}
}

// beforeTool asks the type's BeforeTool hook about a call. A veto is the
// outcome the model sees, and the call is neither run nor counted; a stop
// means the hook failed or the run's context ended.
func (a *Agent) beforeTool(ctx context.Context, c llms.ToolCall, name string) (*toolOutcome, *runStop) {
	h := a.typ.Hooks
	if h == nil || h.BeforeTool == nil || c.FunctionCall == nil {
		return nil, nil
	}
	err := h.BeforeTool(ctx, name, json.RawMessage(orEmptyObject(c.FunctionCall.Arguments)))
	switch {
	case err == nil:
		return nil, nil
	case errors.Is(err, agenttypes.ErrScript):
		return nil, &runStop{reason: ReasonScript, err: fmt.Errorf("type %q: BeforeTool hook: %w", a.typ.Name, err)}
	case ctx.Err() != nil:
		return nil, &runStop{err: ctx.Err()}
	}
	why := cutMiddle(err.Error(), maxToolError)
	a.emit(&Event{Kind: EventToolResult, Tool: name, ToolCallID: c.ID, Args: cutEnd(c.FunctionCall.Arguments, maxToolText), Error: "vetoed by the type's BeforeTool hook: " + why})
	return &toolOutcome{name: name, text: "error: this call was refused: " + why, refused: true}, nil
}

// refuseTool answers a call to a tool the agent may not use: reported to
// the model, never executed.
func (a *Agent) refuseTool(c llms.ToolCall, name string) toolOutcome {
	args := ""
	if c.FunctionCall != nil {
		args = c.FunctionCall.Arguments
	}
	name = cutEnd(name, 256)
	a.emit(&Event{Kind: EventToolResult, Tool: name, ToolCallID: c.ID, Args: cutEnd(args, maxToolText), Error: "refused: not allowed for type " + a.typ.Name})
	return toolOutcome{name: name, refused: true,
		text: fmt.Sprintf("error: tool %q is not available to this agent; the tools you may call are: %s", name, a.tools.names)}
}

// runTool runs one call that was counted. An error becomes the tool's
// text, and a panic an ErrToolPanic that keeps the stack; either way the
// text is cut to what the model may be given.
func (a *Agent) runTool(ctx context.Context, c llms.ToolCall) (o toolOutcome) {
	a.m.toolCalls.Add(1)
	name, args := c.FunctionCall.Name, c.FunctionCall.Arguments
	o.name = name
	tool := a.tools.byName[name]
	if a.step == nil || !a.step.answered { // a tree call answered was reported when made
		a.emit(&Event{Kind: EventToolCall, Tool: name, ToolCallID: c.ID, Args: cutEnd(args, maxToolText)})
	}
	ctx, span := a.m.tel.startTool(ctx, a, c)
	if span != nil {
		defer a.m.tel.endTool(span, &o)
	}
	if a.step != nil {
		ctx = context.WithValue(ctx, stepCallKey{}, c.ID)
	}

	text, panicked, err := invoke(ctx, tool, args)
	if err != nil && errors.Is(err, ErrTreeDeferred) {
		return o // the backend does it, and its result comes with TreeStep
	}
	if panicked != nil {
		a.logger().Error("tool panicked", "tool", name, "panic", panicked.value, "stack", panicked.stack)
		o.err = fmt.Errorf("%w: %s: %w", ErrToolPanic, name, &PanicError{Value: panicked.value, Stack: panicked.stack})
		o.text = "error: " + cutMiddle(o.err.Error(), maxToolError)
		a.emit(&Event{Kind: EventToolResult, Tool: name, ToolCallID: c.ID, Error: cutMiddle(fmt.Sprintf("%s: %v", name, panicked.value), maxToolError)})
		return o
	}
	ev := Event{Kind: EventToolResult, Tool: name, ToolCallID: c.ID, Size: len(text)}
	if err != nil {
		why := cutMiddle(err.Error(), maxToolError)
		text = "error: " + why
		ev.Error = why
		o.err = err
	} else {
		text = cutEnd(text, a.m.cfg.MaxToolResult)
	}
	o.text = text
	if a.observed() {
		ev.Text = cutEnd(text, maxToolText)
		a.emit(&ev)
	}
	return o
}

type panicValue struct {
	value any
	stack string
}

func invoke(ctx context.Context, tool agenttypes.Tool, args string) (text string, p *panicValue, err error) {
	defer func() {
		if v := recover(); v != nil {
			p = &panicValue{value: v, stack: string(debug.Stack())}
		}
	}()
	text, err = tool.Call(ctx, json.RawMessage(orEmptyObject(args)))
	return text, nil, err
}

// cutEnd cuts s to at most limit bytes, on a character boundary, saying
// how much was cut.
func cutEnd(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	note := fmt.Sprintf("\n… [cut: %d bytes in all, the first part shown]", len(s))
	keep := max(limit-len(note), 0)
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + note
}

// cutMiddle cuts s to at most limit bytes, keeping its beginning and its
// end (an error's end says why), on character boundaries.
func cutMiddle(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	mark := fmt.Sprintf(" … [cut: %d bytes in all] … ", len(s))
	room := max(limit-len(mark), 0)
	head, tail := room*2/3, len(s)-(room-room*2/3)
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + mark + s[tail:]
}
