package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
)

// session is the agenttypes.Session of an agent whose type brings its own
// loop. It spends through the same accounting as the manager's loop: the
// same budgets, usage, events and transcript.
type session struct {
	l  *loop
	mu sync.Mutex // one model call at a time: turns and estimates stay exact
	// stop is the first refusal for a used-up budget; the run ends with
	// its reason whatever the loop returns.
	stop *budgetStop
	// over is how far a model call's provider count went past the token
	// budget; the answer was handed over, later calls are refused.
	over int
	// done is set when the loop has returned: calls after it are refused.
	done bool
}

type budgetStop struct {
	reason Reason
	err    error
}

var _ agenttypes.Session = (*session)(nil)

// runCustom runs the type's own loop and ends the agent by what it returned.
func (l *loop) runCustom() {
	a := l.a
	task := a.task
	if a.typ.InheritContext && a.parent != nil {
		if inherited := a.parent.contextFor(l.ctx); inherited != "" {
			task = inherited + "\n\nYour task:\n" + a.task
		}
	}
	s := &session{l: l}
	out, err := a.typ.Loop.Run(l.ctx, s, task)
	// A Generate the loop left running ends before the run does (it holds
	// s.mu throughout); no call starts after this.
	s.mu.Lock()
	s.done = true
	stop, over := s.stop, s.over
	s.mu.Unlock()
	if out != "" {
		l.lastText = out
	}
	switch {
	case l.ctx.Err() != nil:
		l.stopped()
	case stop != nil:
		a.finish(Failed, stop.reason, stop.err, l.partialOutput(), nil, true)
	case err != nil && errors.Is(err, agenttypes.ErrPluginExited):
		l.fail(ReasonPluginExited, err)
	case err != nil:
		l.fail(ReasonLoopError, fmt.Errorf("type %q's loop: %w", a.typ.Name, err))
	default:
		data, perr := l.parseOutput(out)
		if perr != nil {
			a.finish(Failed, ReasonBadOutput, fmt.Errorf("%w: %w", ErrBadOutput, perr), out, nil, true)
			return
		}
		l.add(llms.TextParts(llms.ChatMessageTypeAI, out), out)
		if over > 0 {
			a.emit(&Event{Kind: EventBudgetExceeded, Text: fmt.Sprintf("the run went %d tokens past its token budget of %d; its answer is kept", over, a.budget.MaxTokens)})
		}
		a.finishWith(Completed, ReasonDone, nil, out, data, false, over)
	}
}

// refuse records a budget that ran out and returns the refusal.
func (s *session) refuse(reason Reason, err error) error {
	if s.stop == nil {
		s.stop = &budgetStop{reason: reason, err: err}
	}
	return s.stop.err
}

func (s *session) Generate(ctx context.Context, req agenttypes.GenerateRequest) (*agenttypes.GenerateResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, a := s.l, s.l.a
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := l.ctx.Err(); err != nil {
		return nil, err
	}
	if s.done {
		return nil, errLoopReturned
	}
	if s.stop != nil {
		return nil, s.stop.err
	}
	if s.over > 0 {
		return nil, s.refuse(ReasonBudgetTokens, fmt.Errorf("%w: token budget of %d used up", ErrBudgetExceeded, a.budget.MaxTokens))
	}
	if a.budget.MaxTurns > 0 && l.turns() >= a.budget.MaxTurns {
		return nil, s.refuse(ReasonBudgetTurns, fmt.Errorf("%w: turn budget of %d used up", ErrBudgetExceeded, a.budget.MaxTurns))
	}
	if x := a.costSpent(); x != nil {
		return nil, s.refuse(ReasonBudgetCost, costBudgetError(a, x))
	}
	ts, err := s.offered(req.Tools)
	if err != nil {
		return nil, err
	}
	msgs, err := toLLM(req.Messages)
	if err != nil {
		return nil, err
	}
	// The conversation is the loop's; the manager keeps it for the
	// estimate, the events and a later resume.
	l.msgs, l.tokens = nil, ts.tokens(a.modelName, a.model)
	for _, m := range msgs {
		l.add(m, messageText(m))
	}
	maxOut := a.maxOutput
	if req.MaxTokens > 0 && (maxOut == 0 || req.MaxTokens < maxOut) {
		maxOut = req.MaxTokens
	}
	callCtx, cancel := within(l.ctx, ctx)
	defer cancel()
	maxOut, release, t, err := a.reserveCall(callCtx, l.tokens, maxOut)
	if err != nil {
		return nil, err
	}
	if release == nil {
		return nil, s.refuse(t.reason(), t.err(a))
	}
	opts := make([]llms.CallOption, 0, 3)
	if len(ts.specs) > 0 {
		opts = append(opts, llms.WithTools(ts.specs))
	}
	if maxOut > 0 {
		opts = append(opts, llms.WithMaxTokens(maxOut))
	}
	if a.m.cfg.Stream {
		opts = append(opts, llms.WithStreamingFunc(l.delta))
	}
	choice, usage, err := l.call(callCtx, opts)
	release()
	if choice != nil {
		a.emit(&Event{Kind: EventModelCall, Turn: l.turns(), Usage: usage, Text: choice.Content})
		if choice.Content != "" {
			l.lastText = choice.Content
		}
	}
	if err != nil {
		return nil, err
	}
	if t := a.tokensLeft(); t.agent != nil && t.left < 0 {
		if t.agent == a {
			s.over = -t.left
		} else {
			s.refuse(ReasonBudgetTokens, fmt.Errorf("%w: token budget%s of %d used up", ErrBudgetExceeded, a.whose(t.agent), t.limit))
		}
	}
	resp := &agenttypes.GenerateResponse{Text: choice.Content, Usage: usage}
	for _, c := range choice.ToolCalls {
		if c.FunctionCall == nil {
			continue
		}
		resp.ToolCalls = append(resp.ToolCalls, agenttypes.ToolCall{ID: c.ID, Name: c.FunctionCall.Name, Args: json.RawMessage(orEmptyObject(c.FunctionCall.Arguments))})
	}
	return resp, nil
}

// offered is the tool set a Generate offers: the agent's, or the named
// part of it.
func (s *session) offered(names []string) (*toolset, error) {
	a := s.l.a
	if names == nil {
		return a.tools, nil
	}
	for _, n := range names {
		if a.tools.byName[n] == nil {
			return nil, fmt.Errorf("%w: tool %q is not one of this agent's tools (%s)", agenttypes.ErrToolRefused, n, a.tools.names)
		}
	}
	if len(names) == 0 {
		return &toolset{}, nil
	}
	return a.setup.toolsetOf(a.m, names)
}

func orEmptyObject(args string) string {
	if args == "" {
		return "{}"
	}
	return args
}

func (s *session) CallTool(ctx context.Context, call agenttypes.ToolCall) (string, error) {
	l, a := s.l, s.l.a
	c := llms.ToolCall{ID: call.ID, Type: "function", FunctionCall: &llms.FunctionCall{Name: call.Name, Arguments: orEmptyObject(string(call.Args))}}
	if a.tools.byName[call.Name] == nil {
		o := l.refuse(c, call.Name)
		return "", fmt.Errorf("%w: %s", agenttypes.ErrToolRefused, o.text)
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return "", errLoopReturned
	}
	if s.stop != nil {
		s.mu.Unlock()
		return "", s.stop.err
	}
	// Counted now, so parallel calls cannot pass the budget together.
	if took, t := a.takeToolCalls(1); took == 0 {
		err := s.refuse(ReasonBudgetToolCalls, fmt.Errorf("%w: tool call budget%s of %d used up", ErrBudgetExceeded, a.whose(t.agent), t.limit))
		s.mu.Unlock()
		return "", err
	}
	a.m.toolCalls.Add(1)
	s.mu.Unlock()
	// As in the manager's loop: a tool that waits on other agents lends
	// the agent's slot meanwhile.
	a.m.enterTools(a)
	toolCtx, cancel := within(l.ctx, ctx)
	o := l.runTool(toolCtx, c)
	cancel()
	a.m.leaveTools(a)
	if o.panicked != nil {
		s.mu.Lock()
		if s.stop == nil {
			s.stop = &budgetStop{reason: ReasonToolPanic, err: o.panicked}
		}
		s.mu.Unlock()
		return "", o.panicked
	}
	if o.err != nil {
		return "", o.err
	}
	return o.text, nil
}

func (s *session) Tools() []agenttypes.ToolSpec {
	ts := s.l.a.tools
	out := make([]agenttypes.ToolSpec, 0, len(ts.byName))
	for _, spec := range ts.specs {
		out = append(out, ts.byName[spec.Function.Name].Spec())
	}
	return out
}

func (s *session) Note(text string) { s.l.a.addNote(text) }

// Progress reports what a loop is doing, as an EventProgress: shown to the
// user and kept in the transcript. Plugins' loops reach it through their
// Session's Event.
func (s *session) Progress(text string) {
	if len(text) > maxToolText {
		text = text[:maxToolText]
	}
	s.l.a.emit(&Event{Kind: EventProgress, Text: text})
}

// Tree is the agent's tree; its calls lend the agent's slot while they
// wait on children, as a tool call does.
func (s *session) Tree() agenttypes.Tree { return sessionTree{agentTree{s.l.a}} }

type sessionTree struct{ agentTree }

func (t sessionTree) Delegate(ctx context.Context, req agenttypes.DelegateRequest) (*agenttypes.DelegateResponse, error) {
	t.a.m.enterTools(t.a)
	defer t.a.m.leaveTools(t.a)
	return t.agentTree.Delegate(ctx, req)
}

func (t sessionTree) Collect(ctx context.Context, req agenttypes.CollectRequest) (*agenttypes.CollectResponse, error) {
	t.a.m.enterTools(t.a)
	defer t.a.m.leaveTools(t.a)
	return t.agentTree.Collect(ctx, req)
}

// errLoopReturned refuses a call made after the type's loop returned.
var errLoopReturned = errors.New("the agent's loop has returned; its session takes no more calls")

// toLLM turns a Loop's messages into the model's.
func toLLM(msgs []agenttypes.Message) ([]llms.MessageContent, error) {
	out := make([]llms.MessageContent, 0, len(msgs))
	for i, m := range msgs {
		switch m.Role {
		case agenttypes.RoleSystem:
			out = append(out, llms.TextParts(llms.ChatMessageTypeSystem, m.Text))
		case agenttypes.RoleUser:
			out = append(out, llms.TextParts(llms.ChatMessageTypeHuman, m.Text))
		case agenttypes.RoleAssistant:
			mc := llms.MessageContent{Role: llms.ChatMessageTypeAI}
			if m.Text != "" {
				mc.Parts = append(mc.Parts, llms.TextPart(m.Text))
			}
			for _, c := range m.ToolCalls {
				mc.Parts = append(mc.Parts, llms.ToolCall{ID: c.ID, Type: "function", FunctionCall: &llms.FunctionCall{Name: c.Name, Arguments: orEmptyObject(string(c.Args))}})
			}
			out = append(out, mc)
		case agenttypes.RoleTool:
			out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
				llms.ToolCallResponse{ToolCallID: m.ToolCallID, Name: m.Name, Content: m.Text},
			}})
		default:
			roles := []string{agenttypes.RoleSystem, agenttypes.RoleUser, agenttypes.RoleAssistant, agenttypes.RoleTool}
			return nil, fmt.Errorf("%w: message %d has role %q; use one of %v", ErrBadRequest, i+1, m.Role, roles)
		}
	}
	if !slices.ContainsFunc(out, func(m llms.MessageContent) bool { return m.Role != llms.ChatMessageTypeSystem }) {
		return nil, fmt.Errorf("%w: a model call needs a message besides the system prompt", ErrBadRequest)
	}
	return out, nil
}

// within is the run's context, which carries the agent's environment and
// ends with the run, also ended by the loop's own ctx: a custom loop (a
// plugin's, with its call's deadline) may stop a call sooner than the run.
func within(run, caller context.Context) (context.Context, context.CancelFunc) {
	if caller == nil || caller == run || caller.Done() == nil {
		return run, func() {}
	}
	ctx, cancel := context.WithCancelCause(run)
	var cancelDeadline context.CancelFunc = func() {}
	if d, ok := caller.Deadline(); ok {
		ctx, cancelDeadline = context.WithDeadline(ctx, d)
	}
	stop := context.AfterFunc(caller, func() {
		// The caller's deadline is ours too, and ends ctx as a deadline.
		if _, ok := caller.Deadline(); ok && errors.Is(caller.Err(), context.DeadlineExceeded) {
			return
		}
		cancel(context.Cause(caller))
	})
	return ctx, func() {
		stop()
		cancelDeadline()
		cancel(nil)
	}
}
