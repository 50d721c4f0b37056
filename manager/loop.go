package manager

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"
	"go.opentelemetry.io/otel/trace"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/models/modelcap"
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
	if a.remote() {
		// The backend bounds the run's time itself, where it runs.
		a.runRemote(ctx)
		return
	}
	if a.budget.MaxTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, a.budget.MaxTime, errTimeBudget)
		defer cancel()
	}
	ctx = agenttypes.WithEnv(ctx, &agenttypes.Env{AgentID: a.id, Dir: a.dir, Note: a.addNote, Tree: agentTree{a}, Workspace: a.ws})
	if a.span != nil {
		ctx = trace.ContextWithSpan(ctx, a.span)
	}
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
	reuse    callReuse
	scratch  toolScratch
}

func (l *loop) run() {
	a := l.a
	toolTokens := a.tools.tokens(a.modelName, a.model)
	l.tokens = toolTokens
	if !l.start() {
		return
	}
	for {
		if err := l.ctx.Err(); err != nil {
			l.stopped()
			return
		}
		r, err := a.generate(l.ctx, modelCall{msgs: l.msgs, input: l.tokens, tools: a.tools, toolTokens: toolTokens, task: a.task, keepFinal: true, reuse: &l.reuse})
		if r.choice != nil && r.choice.Content != "" {
			l.lastText = r.choice.Content
		}
		switch stop := asStop(err); {
		case stop != nil:
			l.end(stop)
			return
		case l.ctx.Err() != nil:
			// A model that ignores its context can answer after the time
			// budget ran out: the run ends budget_time whatever it said,
			// with the answer kept as the partial output, stored once, in
			// the completed event.
			if r.choice != nil && len(r.choice.ToolCalls) == 0 {
				a.emit(&Event{Kind: EventModelCall, Turn: r.turn, Usage: r.usage})
			}
			l.stopped()
			return
		case err != nil:
			l.fail(ReasonModelError, err)
			return
		}
		if len(r.choice.ToolCalls) == 0 {
			if l.final(r) {
				return
			}
			continue
		}
		// The tokens or dollars are spent; the tool calls they asked for
		// are not run.
		if r.past != nil {
			l.end(r.past)
			return
		}
		if !l.tools(r.choice) {
			return
		}
	}
}

// asStop is the step's stop err carries, if any.
func asStop(err error) *runStop {
	if err == nil {
		return nil
	}
	var stop *runStop
	if errors.As(err, &stop) {
		return stop
	}
	return nil
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
	l.msgs = make([]llms.MessageContent, 0, a.setup.conversationRoom())
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
	task, ok := l.task()
	if !ok {
		return false
	}
	l.add(llms.TextParts(llms.ChatMessageTypeHuman, task), task)
	return true
}

// task is the task as the model is given it, by the manager's loop or a
// type's own: with what the agent inherits of its parent's conversation,
// when its type inherits context, then through the type's Prompt hook.
// false means the run ended.
func (l *loop) task() (string, bool) {
	a := l.a
	task := a.task
	if a.typ.InheritContext && a.parent != nil {
		if inherited := a.parent.contextFor(l.ctx); inherited != "" {
			task = inherited + "\n\nYour task:\n" + a.task
		}
	}
	h := a.typ.Hooks
	if h == nil || h.Prompt == nil {
		return task, true
	}
	text, err := h.Prompt(l.ctx, agenttypes.ScriptTask{Prompt: task, Type: a.typ.Name, Root: a.dir})
	switch {
	case errors.Is(err, agenttypes.ErrScript):
		// A script stopped by the time budget is the script's failure.
		l.fail(ReasonScript, fmt.Errorf("type %q: Prompt hook: %w", a.typ.Name, err))
		return "", false
	case l.ctx.Err() != nil:
		l.stopped()
		return "", false
	case err != nil:
		l.fail(ReasonScript, fmt.Errorf("%w: type %q: the Prompt hook refused the task: %v", agenttypes.ErrScript, a.typ.Name, err))
		return "", false
	}
	return text, true
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

// add appends a message to the conversation; text is what it says, for
// the token estimate.
func (l *loop) add(m llms.MessageContent, text string) {
	l.msgs = append(l.msgs, m)
	l.a.mu.Lock()
	l.a.history = l.msgs
	l.a.mu.Unlock()
	l.tokens += countTokens(l.a.model, text) + perMessageTokens
}

// addChars is add for a message of chars characters, for a model that
// does not count tokens itself.
func (l *loop) addChars(m llms.MessageContent, chars int) {
	l.msgs = append(l.msgs, m)
	l.a.mu.Lock()
	l.a.history = l.msgs
	l.a.mu.Unlock()
	l.tokens += estimateTokens(chars) + perMessageTokens
}

// perMessageTokens is what each message costs for its role and framing.
const perMessageTokens = 4

// final handles an answer with no tool calls; false means one more turn
// (a retry after an unparsable JSON answer). When the answer took a
// token budget of the chain past its limit (the agent's own or an
// ancestor's), the whole answer is kept all the same, since its tokens
// are spent, and the result says by how much.
func (l *loop) final(r modelReply) bool {
	a := l.a
	content, usage := r.choice.Content, r.usage
	spent := r.past != nil
	data, err := l.parseOutput(content)
	if err != nil {
		hooked := a.typ.Hooks != nil && a.typ.Hooks.Result != nil
		script := errors.Is(err, agenttypes.ErrScript)
		stopped := l.ctx.Err() != nil
		retry := !script && !stopped && !l.retried && (a.typ.Output.Format == agenttypes.OutputJSON || hooked) && !spent
		// An answer sent back for another is stored here; one the run ends
		// with is its output, stored once, in the completed event.
		ev := &Event{Kind: EventModelCall, Turn: r.turn, Usage: usage}
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
	a.emit(&Event{Kind: EventModelCall, Turn: r.turn, Usage: usage})
	a.complete(content, data, r.crossed, r.turn)
	return true
}

// complete ends a run with its final answer, for the manager's loop and a
// type's own alike. crossed is the token budget the answer took the run
// past, if any: the answer is kept all the same, since its tokens are
// spent, and the result and an EventBudgetExceeded say by how much.
func (a *Agent) complete(output string, data any, crossed treeLimit, turn int) {
	over := 0
	if crossed.agent != nil {
		over = -crossed.left
		whose := "its token budget"
		if crossed.agent != a {
			whose = "the token budget" + a.whose(crossed.agent)
		}
		a.emit(&Event{Kind: EventBudgetExceeded, Turn: turn,
			Text: fmt.Sprintf("the final answer took the run %d tokens past %s of %d; it is kept", over, whose, crossed.limit)})
	}
	a.finishWith(Completed, ReasonDone, nil, output, data, false, over)
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
	calls := choice.ToolCalls
	// One array holds the parts of the turn's message and of its results.
	parts := make([]llms.ContentPart, 0, 1+2*len(calls))
	chars := len(choice.Content)
	if choice.Content != "" {
		parts = append(parts, llms.TextPart(choice.Content))
	}
	for _, c := range calls {
		parts = append(parts, c)
		if c.FunctionCall != nil {
			chars += len(c.FunctionCall.Name) + len(c.FunctionCall.Arguments)
		}
	}
	ai := llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: parts[:len(parts):len(parts)]}
	if _, counts := l.a.model.(modelcap.TokenCounter); counts {
		l.add(ai, messageText(ai))
	} else {
		l.addChars(ai, chars) // the same estimate, without the text
	}
	outcomes, stop := l.a.runToolCallsIn(l.ctx, calls, &l.scratch)
	// The results stay in the conversation even when the run ends on
	// them, so that a later agent resuming it sees them.
	for i, o := range outcomes {
		parts = append(parts, llms.ToolCallResponse{ToolCallID: calls[i].ID, Name: o.name, Content: o.text})
		n := len(parts)
		l.add(llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: parts[n-1 : n : n]}, o.text)
	}
	if stop != nil {
		l.end(stop)
		return false
	}
	return true
}

// stopped ends a run whose context ended: the time budget, a cancel of
// the agent or an ancestor, an ancestor ending, or the manager closing.
func (l *loop) stopped() {
	state, reason, err := l.a.stopOutcome(context.Cause(l.ctx))
	l.a.finish(state, reason, err, l.partialOutput(), nil, true)
}

// end ends the run on a step's stop: its reason, or, with none, the
// run's context that ended.
func (l *loop) end(stop *runStop) {
	if stop.reason == "" {
		l.stopped()
		return
	}
	l.fail(stop.reason, stop.err)
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
	return partialText(l.lastText, notes)
}

// partialText is the last assistant text followed by the notes.
func partialText(lastText string, notes []string) string {
	if len(notes) == 0 {
		return lastText
	}
	var b strings.Builder
	b.WriteString(lastText)
	if lastText != "" {
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
// them, and says so (a provider wrapper that estimated says so under
// "TokensEstimated"). Anthropic repeats usage on every choice, so only one is read.
// A model that knows its price reports it as GenerationInfo["CostUSD"].
func usageOf(c *llms.ContentChoice, inputTokens int) Usage {
	in, okIn := modelcap.GenerationInt(c.GenerationInfo, "PromptTokens", "InputTokens")
	out, okOut := modelcap.GenerationInt(c.GenerationInfo, "CompletionTokens", "OutputTokens")
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
	est, _ := c.GenerationInfo["TokensEstimated"].(bool)
	u := Usage{InputTokens: in, OutputTokens: out, Estimated: est || !okIn || !okOut}
	if cost, ok := c.GenerationInfo["CostUSD"].(float64); ok && cost > 0 {
		u.CostUSD = cost
	}
	return u
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
