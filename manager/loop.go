package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
)

var (
	errTimeBudget = errors.New("time budget exhausted")
	maxToolText   = 64 << 10 // bytes of one tool result kept in events
)

// run is the agent's goroutine: the model ↔ tool loop.
func (a *Agent) run() {
	<-a.ready
	if a.stopWatch != nil {
		a.stopWatch() // the loop notices its context from here on
	}
	if _, ok := a.transition(Running); !ok {
		a.m.releaseSlot(a) // it ended while being started
		return
	}
	a.emit(&Event{Kind: EventState, From: Pending, State: Running})

	ctx := a.ctx
	if a.budget.MaxTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, a.budget.MaxTime, errTimeBudget)
		defer cancel()
	}
	ctx = agenttypes.WithEnv(ctx, &agenttypes.Env{AgentID: a.id, Dir: a.dir, Note: a.addNote, Tree: agentTree{a}})
	a.runCtx = ctx

	l := loop{a: a, ctx: ctx}
	defer func() {
		if p := recover(); p != nil {
			stack := string(debug.Stack())
			a.logger().Error("agent loop panicked", "panic", p, "stack", stack)
			reason := ReasonModelError
			if a.typ.Loop != nil {
				reason = ReasonLoopError
			}
			l.fail(reason, fmt.Errorf("internal error: %w", &PanicError{Value: p, Stack: stack}))
		}
	}()
	if a.typ.Loop != nil {
		l.runCustom()
		return
	}
	l.run()
}

// loop holds one run's conversation and counters.
type loop struct {
	a        *Agent
	ctx      context.Context
	msgs     []llms.MessageContent
	tokens   int // estimated tokens of msgs and the tool definitions
	lastText string
	retried  bool // the one retry after an unparsable JSON answer
}

func (l *loop) run() {
	a := l.a
	l.tokens = a.tools.tokens(a.modelName, a.model)
	if !l.start() {
		return
	}
	opts := make([]llms.CallOption, 0, 3)
	if len(a.tools.specs) > 0 {
		opts = append(opts, llms.WithTools(a.tools.specs))
	}
	if a.m.cfg.Stream {
		opts = append(opts, llms.WithStreamingFunc(l.delta))
	}
	for {
		if err := l.ctx.Err(); err != nil {
			l.stopped()
			return
		}
		if a.budget.MaxTurns > 0 && l.turns() >= a.budget.MaxTurns {
			l.endOnBudget(ReasonBudgetTurns, "turn", a, a.budget.MaxTurns)
			return
		}
		if x := a.costSpent(); x != nil {
			l.budgetCost(x)
			return
		}
		// The budget checks cover the agent and its ancestors: what a
		// child spends is charged to them all.
		callOpts := opts
		maxOut, release, t, err := a.reserveCall(l.ctx, l.tokens, a.maxOutput)
		if err != nil {
			l.stopped()
			return
		}
		if release == nil {
			a.finish(Failed, t.reason(), t.err(a), l.partialOutput(), nil, true)
			return
		}
		if maxOut > 0 {
			callOpts = append(opts[:len(opts):len(opts)], llms.WithMaxTokens(maxOut))
		}
		choice, usage, err := l.call(l.ctx, callOpts)
		release()
		if choice != nil && choice.Content != "" {
			l.lastText = choice.Content
		}
		// A model that ignores its context can answer after the time
		// budget ran out: the run ends budget_time whatever it said, with
		// the answer kept as the partial output.
		if l.ctx.Err() != nil {
			if choice != nil {
				// Its text is the partial output, stored once, in the
				// completed event.
				a.emit(&Event{Kind: EventModelCall, Turn: l.turns(), Usage: usage})
			}
			l.stopped()
			return
		}
		if err != nil {
			l.fail(ReasonModelError, err)
			return
		}
		t = a.tokensLeft()
		if len(choice.ToolCalls) == 0 {
			if l.final(choice.Content, usage, t) {
				return
			}
			continue
		}
		a.emit(&Event{Kind: EventModelCall, Turn: l.turns(), Usage: usage, Text: choice.Content})
		// The tokens or dollars are spent; the tool calls they asked for
		// are not run.
		if t.agent != nil && t.left < 0 {
			l.endOnBudget(ReasonBudgetTokens, "token", t.agent, t.limit)
			return
		}
		if x := a.costSpent(); x != nil {
			l.budgetCost(x)
			return
		}
		if !l.tools(choice) {
			return
		}
	}
}

// start puts the conversation's first messages in place: the system
// prompt and the task, or the conversation of the agent this one resumes
// followed by the task. false means the run ended.
func (l *loop) start() bool {
	a := l.a
	if r := a.resumed; r != nil {
		r.mu.Lock()
		prior := slices.Clone(r.history)
		r.mu.Unlock()
		for _, m := range prior {
			l.add(m, messageText(m))
		}
		l.add(llms.TextParts(llms.ChatMessageTypeHuman, a.task), a.task)
		return true
	}
	system, err := a.setup.prompt.Render(l.ctx, agenttypes.PromptData{Type: a.typ.Name, Dir: a.dir, Tools: a.typ.Tools})
	if err != nil {
		if l.ctx.Err() != nil {
			l.stopped()
			return false
		}
		l.fail(ReasonPrompt, fmt.Errorf("type %q: %w", a.typ.Name, err))
		return false
	}
	l.add(llms.TextParts(llms.ChatMessageTypeSystem, system), system)
	task := a.task
	if a.typ.InheritContext && a.parent != nil {
		if inherited := a.parent.contextFor(l.ctx); inherited != "" {
			task = inherited + "\n\nYour task:\n" + a.task
		}
	}
	if h := a.typ.Hooks; h != nil && h.Prompt != nil {
		text, err := h.Prompt(l.ctx, agenttypes.ScriptTask{Prompt: task, Type: a.typ.Name, Root: a.dir})
		switch {
		case errors.Is(err, agenttypes.ErrScript):
			// A script stopped by the time budget is the script's failure.
			l.fail(ReasonScript, fmt.Errorf("type %q: Prompt hook: %w", a.typ.Name, err))
			return false
		case l.ctx.Err() != nil:
			l.stopped()
			return false
		case err != nil:
			l.fail(ReasonScript, fmt.Errorf("%w: type %q: the Prompt hook refused the task: %v", agenttypes.ErrScript, a.typ.Name, err))
			return false
		}
		task = text
	}
	l.add(llms.TextParts(llms.ChatMessageTypeHuman, task), task)
	return true
}

// messageText is what a message says, for token estimates.
func messageText(m llms.MessageContent) string {
	var b strings.Builder
	for _, p := range m.Parts {
		switch p := p.(type) {
		case llms.TextContent:
			b.WriteString(p.Text)
		case llms.ToolCall:
			if p.FunctionCall != nil {
				b.WriteString(p.FunctionCall.Name)
				b.WriteString(p.FunctionCall.Arguments)
			}
		case llms.ToolCallResponse:
			b.WriteString(p.Content)
		}
	}
	return b.String()
}

// delta publishes a chunk of streamed text to subscribers.
func (l *loop) delta(_ context.Context, chunk []byte) error {
	a := l.a
	if len(chunk) == 0 || !a.m.events.active() {
		return nil
	}
	e := Event{Kind: EventModelDelta, Time: a.m.cfg.now(), AgentID: a.id, ParentID: a.parentID, Type: a.typ.Name, Turn: l.turns() + 1, Text: string(chunk)}
	a.m.events.publish(&e)
	return nil
}

// add appends a message to the conversation; text is what it says, for
// the token estimate.
func (l *loop) add(m llms.MessageContent, text string) {
	l.msgs = append(l.msgs, m)
	l.a.mu.Lock()
	l.a.history = l.msgs
	l.a.mu.Unlock()
	l.tokens += countTokens(l.a.model, text) + perMessageTokens
}

// perMessageTokens is what each message costs for its role and framing.
const perMessageTokens = 4

func (l *loop) turns() int {
	l.a.mu.Lock()
	defer l.a.mu.Unlock()
	return l.a.turns
}

// call makes one model call and accounts for it.
func (l *loop) call(ctx context.Context, opts []llms.CallOption) (choice *llms.ContentChoice, usage Usage, err error) {
	a := l.a
	defer func() {
		if p := recover(); p != nil {
			stack := string(debug.Stack())
			a.logger().Error("model panicked", "panic", p, "stack", stack)
			err = fmt.Errorf("model %s: %w", a.modelName, &PanicError{Value: p, Stack: stack})
		}
	}()
	resp, err := a.model.GenerateContent(ctx, l.msgs, opts...)
	a.mu.Lock()
	a.turns++
	a.mu.Unlock()
	a.m.turns.Add(1)
	if err != nil {
		return nil, Usage{}, fmt.Errorf("model %s: %w", a.modelName, err)
	}
	if resp == nil || len(resp.Choices) == 0 || resp.Choices[0] == nil {
		return nil, Usage{}, fmt.Errorf("model %s returned no choices", a.modelName)
	}
	choice = resp.Choices[0]
	usage = usageOf(choice, l.tokens)
	a.charge(usage)
	a.m.inTokens.Add(int64(usage.InputTokens))
	a.m.outTokens.Add(int64(usage.OutputTokens))
	a.m.costNanoUSD.Add(int64(usage.CostUSD * 1e9))
	return choice, usage, nil
}

// final handles an answer with no tool calls; false means one more turn
// (a retry after an unparsable JSON answer). t is the tightest token
// budget of the chain: when the answer took it past its limit (the
// agent's own or an ancestor's), the whole answer is kept all the same,
// since its tokens are spent, and the result says by how much.
func (l *loop) final(content string, usage Usage, t treeLimit) bool {
	a := l.a
	over := 0
	if t.agent != nil && t.left < 0 {
		over = -t.left
	}
	data, err := l.parseOutput(content)
	if err != nil {
		hooked := a.typ.Hooks != nil && a.typ.Hooks.Result != nil
		script := errors.Is(err, agenttypes.ErrScript)
		stopped := l.ctx.Err() != nil
		retry := !script && !stopped && !l.retried && (a.typ.Output.Format == agenttypes.OutputJSON || hooked) && over <= 0
		// An answer sent back for another is stored here; one the run ends
		// with is its output, stored once, in the completed event.
		ev := &Event{Kind: EventModelCall, Turn: l.turns(), Usage: usage}
		if retry {
			ev.Text = content
		}
		a.emit(ev)
		switch {
		case script:
			a.finish(Failed, ReasonScript, fmt.Errorf("type %q: Result hook: %w", a.typ.Name, err), content, nil, true)
		case stopped:
			l.lastText = content
			l.stopped()
		case retry:
			l.retried = true
			l.add(llms.TextParts(llms.ChatMessageTypeAI, content), content)
			msg := "Your answer was not accepted: " + err.Error() + ". Reply again with only the JSON value, matching the schema."
			if a.typ.Output.Format != agenttypes.OutputJSON {
				msg = "Your answer was not accepted: " + err.Error() + ". Reply again with an answer that fixes this."
			}
			l.add(llms.TextParts(llms.ChatMessageTypeHuman, msg), msg)
			return false
		default:
			a.finish(Failed, ReasonBadOutput, fmt.Errorf("%w: %w", ErrBadOutput, err), content, nil, true)
		}
		return true
	}
	// The answer closes the conversation a later agent may resume.
	l.add(llms.TextParts(llms.ChatMessageTypeAI, content), content)
	// The final text is stored once, in the completed event.
	a.emit(&Event{Kind: EventModelCall, Turn: l.turns(), Usage: usage})
	if over > 0 {
		whose := "its token budget"
		if t.agent != a {
			whose = "the token budget" + a.whose(t.agent)
		}
		a.emit(&Event{Kind: EventBudgetExceeded, Turn: l.turns(), Usage: usage,
			Text: fmt.Sprintf("the final answer took the run %d tokens past %s of %d; it is kept", over, whose, t.limit)})
	}
	a.finishWith(Completed, ReasonDone, nil, content, data, false, over)
	return true
}

// parseOutput turns the final answer into the type's structured data.
func (l *loop) parseOutput(content string) (any, error) {
	a := l.a
	var data any
	if a.typ.Output.Format == agenttypes.OutputJSON {
		v, err := a.typ.Output.Parse(l.ctx, content)
		if err != nil {
			return nil, err
		}
		data = v
	}
	if a.typ.ParseOutput != nil {
		v, err := safeParse(a.typ.ParseOutput, content)
		if err != nil {
			return nil, err
		}
		data = v
	}
	if h := a.typ.Hooks; h != nil && h.Result != nil {
		v, err := h.Result(l.ctx, content)
		if err != nil {
			return nil, err
		}
		data = v
	}
	return data, nil
}

// tools runs the tool calls of one turn; false means the run ended.
func (l *loop) tools(choice *llms.ContentChoice) bool {
	a := l.a
	calls := choice.ToolCalls
	ai := llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: make([]llms.ContentPart, 0, len(calls)+1)}
	var text strings.Builder
	if choice.Content != "" {
		ai.Parts = append(ai.Parts, llms.TextPart(choice.Content))
		text.WriteString(choice.Content)
	}
	for _, c := range calls {
		ai.Parts = append(ai.Parts, c)
		if c.FunctionCall != nil {
			text.WriteString(c.FunctionCall.Name)
			text.WriteString(c.FunctionCall.Arguments)
		}
	}
	l.add(ai, text.String())

	// A call to a tool the agent may not use is refused and costs nothing,
	// and so does one the type's BeforeTool hook vetoes; of the others,
	// only as many as the budget still allows are run, in call order.
	results := make([]toolOutcome, len(calls))
	run := make([]int, 0, len(calls))
	for i, c := range calls {
		name := ""
		if c.FunctionCall != nil {
			name = c.FunctionCall.Name
		}
		if _, ok := a.tools.byName[name]; !ok {
			results[i] = l.refuse(c, name)
			continue
		}
		veto, ended := l.beforeTool(c, name)
		if ended {
			return false
		}
		if veto != nil {
			results[i] = *veto
			continue
		}
		run = append(run, i)
	}
	took, limit := a.takeToolCalls(len(run))
	cut := took < len(run)
	for _, i := range run[took:] {
		results[i] = toolOutcome{name: calls[i].FunctionCall.Name, text: "error: not run: the tool-call budget is used up"}
	}
	run = run[:took]
	l.execute(calls, run, results)
	for _, i := range run {
		if results[i].panicked != nil {
			a.finish(Failed, ReasonToolPanic, results[i].panicked, l.partialOutput(), nil, true)
			return false
		}
	}
	// A tool whose script crashed or whose plugin process died ends the
	// run: the model cannot work around the tool's host going away.
	for _, i := range run {
		switch err := results[i].err; {
		case errors.Is(err, agenttypes.ErrScript):
			l.fail(ReasonScript, fmt.Errorf("script tool %s: %w", results[i].name, err))
			return false
		case errors.Is(err, agenttypes.ErrPluginExited):
			l.fail(ReasonPluginExited, fmt.Errorf("tool %s: %w", results[i].name, err))
			return false
		}
	}
	for i, r := range results {
		l.add(llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
			llms.ToolCallResponse{ToolCallID: calls[i].ID, Name: r.name, Content: r.text},
		}}, r.text)
	}
	if err := l.ctx.Err(); err != nil {
		l.stopped()
		return false
	}
	if cut {
		l.endOnBudget(ReasonBudgetToolCalls, "tool call", limit.agent, limit.limit)
		return false
	}
	return true
}

type toolOutcome struct {
	name     string
	text     string // what goes back to the model: the tool's text or "error: …"
	err      error  // the tool's own error
	panicked error
}

// execute runs the calls at the indexes in run, several at once up to
// ToolConcurrency, and puts each outcome at its call's index so results
// go back in call order.
func (l *loop) execute(calls []llms.ToolCall, run []int, out []toolOutcome) {
	l.a.m.enterTools(l.a)
	defer l.a.m.leaveTools(l.a)
	if len(run) == 1 {
		out[run[0]] = l.callTool(calls[run[0]])
		return
	}
	sem := make(chan struct{}, l.a.m.cfg.ToolConcurrency)
	var wg sync.WaitGroup
	for _, i := range run {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i] = l.callTool(calls[i])
		}()
	}
	wg.Wait()
}

// beforeTool asks the type's BeforeTool hook about a call. A veto is the
// outcome the model sees, and the call is neither run nor counted; ended
// means the hook failed or the run's context ended, and the run is over.
func (l *loop) beforeTool(c llms.ToolCall, name string) (veto *toolOutcome, ended bool) {
	a := l.a
	h := a.typ.Hooks
	if h == nil || h.BeforeTool == nil || c.FunctionCall == nil {
		return nil, false
	}
	err := h.BeforeTool(l.ctx, name, json.RawMessage(c.FunctionCall.Arguments))
	switch {
	case err == nil:
		return nil, false
	case errors.Is(err, agenttypes.ErrScript):
		l.fail(ReasonScript, fmt.Errorf("type %q: BeforeTool hook: %w", a.typ.Name, err))
		return nil, true
	case l.ctx.Err() != nil:
		l.stopped()
		return nil, true
	}
	a.emit(&Event{Kind: EventToolResult, Tool: name, ToolCallID: c.ID, Args: c.FunctionCall.Arguments, Error: "vetoed by the type's BeforeTool hook: " + err.Error()})
	return &toolOutcome{name: name, text: "error: this call was refused: " + err.Error()}, false
}

// refuse answers a call to a tool the agent may not use: reported to the
// model, never executed.
func (l *loop) refuse(c llms.ToolCall, name string) toolOutcome {
	a := l.a
	args := ""
	if c.FunctionCall != nil {
		args = c.FunctionCall.Arguments
	}
	a.emit(&Event{Kind: EventToolResult, Tool: name, ToolCallID: c.ID, Args: args, Error: "refused: not allowed for type " + a.typ.Name})
	return toolOutcome{name: name, text: fmt.Sprintf("error: tool %q is not available to this agent; the tools you may call are: %s", name, a.tools.names)}
}

// callTool runs one call to a tool the agent may use, taken from its
// budget by takeToolCalls.
func (l *loop) callTool(c llms.ToolCall) toolOutcome {
	l.a.m.toolCalls.Add(1)
	return l.runTool(l.ctx, c)
}

// runTool runs one call that was counted. An error becomes the tool's
// text; a panic is kept.
func (l *loop) runTool(ctx context.Context, c llms.ToolCall) (o toolOutcome) {
	a := l.a
	name, args := c.FunctionCall.Name, c.FunctionCall.Arguments
	o.name = name
	tool := a.tools.byName[name]
	a.emit(&Event{Kind: EventToolCall, Tool: name, ToolCallID: c.ID, Args: args})

	text, err, panicked := invoke(ctx, tool, args)
	if panicked != nil {
		a.logger().Error("tool panicked", "tool", name, "panic", panicked.value, "stack", panicked.stack)
		o.panicked = fmt.Errorf("%w: %s: %w", ErrToolPanic, name, &PanicError{Value: panicked.value, Stack: panicked.stack})
		a.emit(&Event{Kind: EventToolResult, Tool: name, ToolCallID: c.ID, Error: fmt.Sprintf("%s: %v", name, panicked.value)})
		return o
	}
	ev := Event{Kind: EventToolResult, Tool: name, ToolCallID: c.ID, Size: len(text)}
	if err != nil {
		text = "error: " + err.Error()
		ev.Error = err.Error()
		o.err = err
	}
	o.text = text
	if a.observed() {
		ev.Text = text
		if len(ev.Text) > maxToolText {
			ev.Text = ev.Text[:maxToolText]
		}
		a.emit(&ev)
	}
	return o
}

type panicValue struct {
	value any
	stack string
}

func invoke(ctx context.Context, tool agenttypes.Tool, args string) (text string, err error, p *panicValue) {
	defer func() {
		if v := recover(); v != nil {
			p = &panicValue{value: v, stack: string(debug.Stack())}
		}
	}()
	if args == "" {
		args = "{}"
	}
	text, err = tool.Call(ctx, json.RawMessage(args))
	return text, err, nil
}

// stopped ends a run whose context ended: the time budget, a cancel of
// the agent or an ancestor, an ancestor ending, or the manager closing.
func (l *loop) stopped() {
	state, reason, err := l.a.stopOutcome(context.Cause(l.ctx))
	l.a.finish(state, reason, err, l.partialOutput(), nil, true)
}

// endOnBudget ends the run on a used-up budget of x, the agent or an
// ancestor.
func (l *loop) endOnBudget(reason Reason, what string, x *Agent, limit int) {
	l.a.finish(Failed, reason, fmt.Errorf("%w: %s budget%s of %d used up", ErrBudgetExceeded, what, l.a.whose(x), limit), l.partialOutput(), nil, true)
}

func (l *loop) budgetCost(x *Agent) {
	l.a.finish(Failed, ReasonBudgetCost, costBudgetError(l.a, x), l.partialOutput(), nil, true)
}

func (l *loop) fail(reason Reason, err error) {
	l.a.finish(Failed, reason, err, l.partialOutput(), nil, true)
}

// partialOutput is what a run cut short returns: the last assistant text
// and the agent's notes.
func (l *loop) partialOutput() string {
	l.a.mu.Lock()
	notes := l.a.notes
	l.a.mu.Unlock()
	if len(notes) == 0 {
		return l.lastText
	}
	var b strings.Builder
	b.WriteString(l.lastText)
	if l.lastText != "" {
		b.WriteString("\n\n")
	}
	b.WriteString("## Notes\n")
	for _, n := range notes {
		b.WriteString("- ")
		b.WriteString(n)
		b.WriteByte('\n')
	}
	return b.String()
}

// estimateTokens is the rough count used before a provider's own: four
// characters a token.
func estimateTokens(chars int) int { return (chars + 3) / 4 }

// usageOf reads the provider's token counts from a choice, or estimates
// them. Anthropic repeats usage on every choice, so only one is read.
// A model that knows its price reports it as GenerationInfo["CostUSD"].
func usageOf(c *llms.ContentChoice, inputTokens int) Usage {
	in, okIn := GenerationInt(c.GenerationInfo, "PromptTokens", "InputTokens")
	out, okOut := GenerationInt(c.GenerationInfo, "CompletionTokens", "OutputTokens")
	if !okIn {
		in = inputTokens
	}
	if !okOut {
		n := len(c.Content)
		for _, tc := range c.ToolCalls {
			if tc.FunctionCall != nil {
				n += len(tc.FunctionCall.Name) + len(tc.FunctionCall.Arguments)
			}
		}
		out = estimateTokens(n)
	}
	u := Usage{InputTokens: in, OutputTokens: out}
	if cost, ok := c.GenerationInfo["CostUSD"].(float64); ok && cost > 0 {
		u.CostUSD = cost
	}
	return u
}

// GenerationInt reads a count a provider put in a choice's GenerationInfo
// under the first of keys it has, whatever integer or float type it used.
func GenerationInt(info map[string]any, keys ...string) (int, bool) {
	for _, k := range keys {
		switch v := info[k].(type) {
		case int:
			return v, true
		case int32:
			return int(v), true
		case int64:
			return int(v), true
		case float64:
			return int(v), true
		}
	}
	return 0, false
}

func safeParse(parse func(string) (any, error), s string) (v any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("output parser: %w", &PanicError{Value: p, Stack: string(debug.Stack())})
		}
	}()
	return parse(s)
}

// maxInheritedBytes caps the parent's conversation a child inherits; the
// most recent part is kept.
const maxInheritedBytes = 32 << 10

// conversationText is the agent's conversation so far, after its system
// prompt, as plain text: one block per message, tool calls and results
// named. Text rather than messages, so that a child whose tools differ
// from its parent's sends its provider no calls to tools it lacks. At most
// max bytes, the most recent.
func (a *Agent) conversationText(max int) string {
	a.mu.Lock()
	msgs := a.history
	a.mu.Unlock()
	var blocks []string
	size := 0
	for i := len(msgs) - 1; i >= 0 && size < max; i-- {
		m := msgs[i]
		if m.Role == llms.ChatMessageTypeSystem {
			continue
		}
		var b strings.Builder
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.TextContent:
				fmt.Fprintf(&b, "[%s] %s\n", m.Role, p.Text)
			case llms.ToolCall:
				if p.FunctionCall != nil {
					fmt.Fprintf(&b, "[%s calls %s] %s\n", m.Role, p.FunctionCall.Name, p.FunctionCall.Arguments)
				}
			case llms.ToolCallResponse:
				fmt.Fprintf(&b, "[result of %s] %s\n", p.Name, p.Content)
			}
		}
		blocks = append(blocks, b.String())
		size += b.Len()
	}
	slices.Reverse(blocks)
	text := strings.Join(blocks, "")
	if len(text) > max {
		cut := len(text) - max
		for cut < len(text) && !utf8.RuneStart(text[cut]) {
			cut++
		}
		text = "…" + text[cut:]
	}
	return strings.TrimRight(text, "\n")
}
