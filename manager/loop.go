package manager

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"text/template"

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
	defer a.m.release()
	if _, ok := a.transition(Running); !ok {
		return // cancelled while it was being started; finish already ran
	}
	a.emit(&Event{Kind: EventState, From: Pending, State: Running})

	ctx := a.ctx
	if a.budget.MaxTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, a.budget.MaxTime, errTimeBudget)
		defer cancel()
	}
	ctx = agenttypes.WithEnv(ctx, &agenttypes.Env{AgentID: a.id, Dir: a.dir, Note: a.addNote})

	l := loop{a: a, ctx: ctx}
	defer func() {
		if p := recover(); p != nil {
			a.logger().Error("agent loop panicked", "panic", p, "stack", string(debug.Stack()))
			l.fail(ReasonModelError, fmt.Errorf("internal error: %v", p))
		}
	}()
	l.run()
}

// loop holds one run's conversation and counters.
type loop struct {
	a        *Agent
	ctx      context.Context
	msgs     []llms.MessageContent
	chars    int // characters in msgs, for token estimates
	lastText string
	retried  bool // the one retry after an unparsable JSON answer
}

func (l *loop) run() {
	a := l.a
	system, err := renderPrompt(a)
	if err != nil {
		l.fail(ReasonBadOutput, err)
		return
	}
	l.add(llms.TextParts(llms.ChatMessageTypeSystem, system), len(system))
	l.add(llms.TextParts(llms.ChatMessageTypeHuman, a.task), len(a.task))

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
			l.budget(ReasonBudgetTurns, "turn", a.budget.MaxTurns)
			return
		}
		callOpts := opts
		if a.budget.MaxTokens > 0 {
			left := a.budget.MaxTokens - l.used() - estimateTokens(l.chars)
			if left < a.m.cfg.MinOutputTokens {
				l.budget(ReasonBudgetTokens, "token", a.budget.MaxTokens)
				return
			}
			callOpts = append(opts[:len(opts):len(opts)], llms.WithMaxTokens(left))
		}
		choice, usage, err := l.call(callOpts)
		if err != nil {
			if l.ctx.Err() != nil {
				l.stopped()
				return
			}
			l.fail(ReasonModelError, err)
			return
		}
		if choice.Content != "" {
			l.lastText = choice.Content
		}
		a.emit(&Event{Kind: EventModelCall, Turn: l.turns(), Usage: usage, Text: choice.Content})
		if a.budget.MaxTokens > 0 && l.used() > a.budget.MaxTokens {
			l.budget(ReasonBudgetTokens, "token", a.budget.MaxTokens)
			return
		}
		if len(choice.ToolCalls) == 0 {
			if l.final(choice.Content) {
				return
			}
			continue
		}
		if !l.tools(choice) {
			return
		}
	}
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

func (l *loop) add(m llms.MessageContent, chars int) {
	l.msgs = append(l.msgs, m)
	l.chars += chars
}

func (l *loop) turns() int {
	l.a.mu.Lock()
	defer l.a.mu.Unlock()
	return l.a.turns
}

func (l *loop) used() int {
	l.a.mu.Lock()
	defer l.a.mu.Unlock()
	return l.a.usage.Total()
}

// call makes one model call and accounts for it.
func (l *loop) call(opts []llms.CallOption) (choice *llms.ContentChoice, usage Usage, err error) {
	a := l.a
	defer func() {
		if p := recover(); p != nil {
			a.logger().Error("model panicked", "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("model %s panicked: %v", a.modelName, p)
		}
	}()
	resp, err := a.model.GenerateContent(l.ctx, l.msgs, opts...)
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
	usage = usageOf(choice, l.chars)
	a.mu.Lock()
	a.usage = a.usage.add(usage)
	a.mu.Unlock()
	a.m.inTokens.Add(int64(usage.InputTokens))
	a.m.outTokens.Add(int64(usage.OutputTokens))
	a.m.costNanoUSD.Add(int64(usage.CostUSD * 1e9))
	return choice, usage, nil
}

// final handles an answer with no tool calls; false means one more turn
// (a retry after an unparsable JSON answer).
func (l *loop) final(content string) bool {
	a := l.a
	var data any
	if a.typ.Output.Format == agenttypes.OutputJSON {
		v, err := a.typ.Output.Parse(content)
		if err != nil {
			if !l.retried {
				l.retried = true
				l.add(llms.TextParts(llms.ChatMessageTypeAI, content), len(content))
				msg := "Your answer was not accepted: " + err.Error() + ". Reply again with only the JSON value, matching the schema."
				l.add(llms.TextParts(llms.ChatMessageTypeHuman, msg), len(msg))
				return false
			}
			a.finish(Failed, ReasonBadOutput, fmt.Errorf("%w: %w", ErrBadOutput, err), content, nil, true)
			return true
		}
		data = v
	}
	if a.typ.ParseOutput != nil {
		v, err := safeParse(a.typ.ParseOutput, content)
		if err != nil {
			a.finish(Failed, ReasonBadOutput, fmt.Errorf("%w: %w", ErrBadOutput, err), content, nil, true)
			return true
		}
		data = v
	}
	a.finish(Completed, ReasonDone, nil, content, data, false)
	return true
}

// tools runs the tool calls of one turn; false means the run ended.
func (l *loop) tools(choice *llms.ContentChoice) bool {
	a := l.a
	calls := choice.ToolCalls
	ai := llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: make([]llms.ContentPart, 0, len(calls)+1)}
	chars := len(choice.Content)
	if choice.Content != "" {
		ai.Parts = append(ai.Parts, llms.TextPart(choice.Content))
	}
	for _, c := range calls {
		ai.Parts = append(ai.Parts, c)
		if c.FunctionCall != nil {
			chars += len(c.FunctionCall.Name) + len(c.FunctionCall.Arguments)
		}
	}
	l.add(ai, chars)

	// Only the calls the budget still allows are executed.
	allowed := len(calls)
	if max := a.budget.MaxToolCalls; max > 0 {
		a.mu.Lock()
		left := max - a.toolCalls
		a.mu.Unlock()
		allowed = min(allowed, left)
	}
	results := make([]toolOutcome, allowed)
	l.execute(calls[:allowed], results)
	for i := range results {
		if results[i].panicked != nil {
			a.finish(Failed, ReasonToolPanic, results[i].panicked, l.partialOutput(), nil, true)
			return false
		}
	}
	for i, r := range results {
		c := calls[i]
		l.add(llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
			llms.ToolCallResponse{ToolCallID: c.ID, Name: r.name, Content: r.text},
		}}, len(r.text))
	}
	if allowed < len(calls) {
		l.budget(ReasonBudgetToolCalls, "tool call", a.budget.MaxToolCalls)
		return false
	}
	if err := l.ctx.Err(); err != nil {
		l.stopped()
		return false
	}
	return true
}

type toolOutcome struct {
	name     string
	text     string
	panicked error
}

// execute runs calls, several at once up to ToolConcurrency, and puts each
// outcome at its call's index so results go back in call order.
func (l *loop) execute(calls []llms.ToolCall, out []toolOutcome) {
	if len(calls) == 1 {
		out[0] = l.callTool(calls[0])
		return
	}
	sem := make(chan struct{}, l.a.m.cfg.ToolConcurrency)
	var wg sync.WaitGroup
	for i, c := range calls {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i] = l.callTool(c)
		}()
	}
	wg.Wait()
}

// callTool runs one tool call. A refused call is reported to the model and
// never executed; an error becomes the tool's text; a panic is kept.
func (l *loop) callTool(c llms.ToolCall) (o toolOutcome) {
	a := l.a
	name, args := "", ""
	if c.FunctionCall != nil {
		name, args = c.FunctionCall.Name, c.FunctionCall.Arguments
	}
	o.name = name
	tool, ok := a.tools.byName[name]
	if !ok {
		o.text = fmt.Sprintf("error: tool %q is not available to this agent; the tools you may call are: %s", name, a.tools.names)
		a.emit(&Event{Kind: EventToolResult, Tool: name, ToolCallID: c.ID, Args: args, Error: "refused: not allowed for type " + a.typ.Name})
		return o
	}
	a.mu.Lock()
	a.toolCalls++
	a.mu.Unlock()
	a.m.toolCalls.Add(1)
	a.emit(&Event{Kind: EventToolCall, Tool: name, ToolCallID: c.ID, Args: args})

	text, err, panicked := invoke(l.ctx, tool, args)
	if panicked != nil {
		a.logger().Error("tool panicked", "tool", name, "panic", panicked.value, "stack", panicked.stack)
		o.panicked = fmt.Errorf("%w: %s: %v", ErrToolPanic, name, panicked.value)
		a.emit(&Event{Kind: EventToolResult, Tool: name, ToolCallID: c.ID, Error: o.panicked.Error()})
		return o
	}
	ev := Event{Kind: EventToolResult, Tool: name, ToolCallID: c.ID, Size: len(text)}
	if err != nil {
		text = "error: " + err.Error()
		ev.Error = err.Error()
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

// stopped ends a run whose context ended: the time budget, a cancel, or
// the manager closing.
func (l *loop) stopped() {
	cause := context.Cause(l.ctx)
	switch {
	case errors.Is(cause, errTimeBudget):
		l.a.finish(Failed, ReasonBudgetTime,
			fmt.Errorf("%w: time budget of %s used up: %w", ErrBudgetExceeded, l.a.budget.MaxTime, context.DeadlineExceeded),
			l.partialOutput(), nil, true)
	case errors.Is(cause, errShutdown):
		l.a.finish(Cancelled, ReasonShutdown, fmt.Errorf("manager closed: %w", context.Canceled), l.partialOutput(), nil, true)
	default:
		l.a.finish(Cancelled, ReasonCancelled, fmt.Errorf("agent cancelled: %w", context.Canceled), l.partialOutput(), nil, true)
	}
}

func (l *loop) budget(reason Reason, what string, limit int) {
	l.a.finish(Failed, reason, fmt.Errorf("%w: %s budget of %d used up", ErrBudgetExceeded, what, limit), l.partialOutput(), nil, true)
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
func usageOf(c *llms.ContentChoice, inputChars int) Usage {
	in, okIn := intInfo(c.GenerationInfo, "PromptTokens", "InputTokens")
	out, okOut := intInfo(c.GenerationInfo, "CompletionTokens", "OutputTokens")
	if !okIn {
		in = estimateTokens(inputChars)
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

func intInfo(info map[string]any, keys ...string) (int, bool) {
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

var promptCache sync.Map // *agenttypes.Type → *template.Template

func renderPrompt(a *Agent) (string, error) {
	if !strings.Contains(a.typ.Prompt, "{{") {
		return a.typ.Prompt, nil
	}
	var tmpl *template.Template
	if v, ok := promptCache.Load(a.typ); ok {
		tmpl = v.(*template.Template)
	} else {
		t, err := template.New(a.typ.Name).Option("missingkey=error").Parse(a.typ.Prompt)
		if err != nil {
			return "", fmt.Errorf("type %q: prompt template: %w", a.typ.Name, err)
		}
		promptCache.Store(a.typ, t)
		tmpl = t
	}
	var b bytes.Buffer
	err := tmpl.Execute(&b, agenttypes.PromptData{Type: a.typ.Name, Dir: a.dir, Tools: a.typ.Tools})
	if err != nil {
		return "", fmt.Errorf("type %q: prompt template: %w", a.typ.Name, err)
	}
	return b.String(), nil
}

func safeParse(parse func(string) (any, error), s string) (v any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("output parser panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return parse(s)
}
