package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
)

// session is the agenttypes.Session of an agent whose type brings its own
// loop. Its calls go through the same steps as the manager's loop
// (generate and runToolCalls): the same hooks, budgets, usage, events and
// transcript. mu guards the session's own state only, never a call: a
// tool call is not held behind a model call in flight, nor one model
// call behind another.
type session struct {
	l *loop
	// ctx ends the calls of the session: the run's context, cancelled
	// too once the loop has returned, so no call outlives the run.
	ctx    context.Context
	cancel context.CancelFunc
	calls  sync.WaitGroup // calls in flight

	mu sync.Mutex
	// stop is the first stop of a step (a used-up budget, a failure the
	// run cannot go on from); the run ends with it whatever the loop
	// returns, and later calls are refused with it.
	stop *runStop
	// past is the budget a model call took the run past: its answer was
	// handed over, and later calls are refused with it; crossed is the
	// token budget the loop's calls took furthest past its limit.
	past    *runStop
	crossed treeLimit
	// done is set when the loop has returned: calls after it are refused.
	done bool
}

var _ agenttypes.Session = (*session)(nil)

// runCustom runs the type's own loop and ends the agent by what it returned.
func (l *loop) runCustom() {
	a := l.a
	task, ok := l.task()
	if !ok {
		return
	}
	s := &session{l: l}
	s.ctx, s.cancel = context.WithCancel(l.ctx)
	out, err := a.typ.Loop.Run(l.ctx, s, task)
	// A call the loop left in flight is cancelled, and ends before the
	// run does; no call starts after this.
	s.mu.Lock()
	s.done = true
	s.mu.Unlock()
	s.cancel()
	s.calls.Wait()
	s.mu.Lock()
	stop, crossed := s.stop, s.crossed
	s.mu.Unlock()
	if out != "" {
		l.lastText = out
	}
	switch {
	case l.ctx.Err() != nil:
		l.stopped()
	case stop != nil:
		l.end(stop)
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
		a.complete(out, data, crossed, 0)
	}
}

// enter admits a call: refused once the loop has returned or a step
// stopped the run. leave must follow an admitted call.
func (s *session) enter() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.done:
		return errLoopReturned
	case s.stop != nil:
		return s.stop
	case s.past != nil:
		return s.record(s.past)
	}
	s.calls.Add(1)
	return nil
}

func (s *session) leave() { s.calls.Done() }

// record keeps the first stop, under s.mu, and returns it.
func (s *session) record(stop *runStop) error {
	if s.stop == nil {
		s.stop = stop
	}
	return s.stop
}

// recordLocked is record for a caller not holding s.mu.
func (s *session) recordLocked(stop *runStop) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.record(stop)
}

func (s *session) Generate(ctx context.Context, req agenttypes.GenerateRequest) (*agenttypes.GenerateResponse, error) {
	l, a := s.l, s.l.a
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	ts, err := s.offered(req.Tools)
	if err != nil {
		return nil, err
	}
	msgs, err := toLLM(req.Messages)
	if err != nil {
		return nil, err
	}
	toolTokens := ts.tokens(a.modelName, a.model)
	tokens := toolTokens
	for _, m := range msgs {
		tokens += countTokens(a.model, messageText(m)) + perMessageTokens
	}
	// The conversation is the loop's; the manager keeps the latest for
	// children that inherit it and for a later resume.
	s.mu.Lock()
	l.msgs = msgs
	a.mu.Lock()
	a.history = msgs
	a.mu.Unlock()
	s.mu.Unlock()
	callCtx, cancel := within(s.ctx, ctx)
	defer cancel()
	r, err := a.generate(callCtx, modelCall{msgs: msgs, input: tokens, tools: ts, toolTokens: toolTokens, maxOut: req.MaxTokens})
	var stop *runStop
	if errors.As(err, &stop) {
		return nil, s.recordLocked(stop)
	}
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if r.choice.Content != "" {
		l.lastText = r.choice.Content
	}
	// As in the manager's loop: an answer that took the run past a budget
	// is kept, and the next call is refused.
	if r.past != nil && s.past == nil {
		s.past = r.past
	}
	if c := r.crossed; c.agent != nil && (s.crossed.agent == nil || c.left < s.crossed.left) {
		s.crossed = c
	}
	s.mu.Unlock()
	resp := &agenttypes.GenerateResponse{Text: r.choice.Content, Usage: r.usage}
	for _, c := range r.choice.ToolCalls {
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
	a := s.l.a
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if err := s.enter(); err != nil {
		return "", err
	}
	defer s.leave()
	c := llms.ToolCall{ID: call.ID, Type: "function", FunctionCall: &llms.FunctionCall{Name: call.Name, Arguments: orEmptyObject(string(call.Args))}}
	toolCtx, cancel := within(s.ctx, ctx)
	defer cancel()
	outcomes, stop := a.runToolCalls(toolCtx, []llms.ToolCall{c})
	switch {
	case stop != nil && stop.reason != "":
		s.recordLocked(stop)
		return "", stop.err
	case stop != nil:
		return "", stop.err
	}
	switch o := outcomes[0]; {
	case o.refused:
		return "", fmt.Errorf("%w: %s", agenttypes.ErrToolRefused, strings.TrimPrefix(o.text, "error: "))
	case o.err != nil:
		return "", &toolError{text: strings.TrimPrefix(o.text, "error: "), err: o.err}
	default:
		return o.text, nil
	}
}

// toolError is a tool's error as a type's own loop gets it: its text cut
// as the model's would be, the error itself kept for errors.Is.
type toolError struct {
	text string
	err  error
}

func (e *toolError) Error() string { return e.text }
func (e *toolError) Unwrap() error { return e.err }

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
