package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/models/modelcap"
)

// Steps: the manager's loop, one step at a time, for an agent whose loop
// runs elsewhere. A durable backend (the Temporal one) keeps an agent's
// conversation and budgets in a workflow that survives a crash, and makes
// each model call and each turn's tool calls an activity. Each activity
// is one of the steps below, run by a manager of the worker's: the same
// code as the manager's own loop, so the rules are written once (the
// budgets' checks and caps, the prompt and its hooks, the refusal of a
// tool the agent may not use, the cut of a long result, the retry of an
// unparsable answer, the events). What the backend keeps between steps,
// a step is told: the agent's budget and what its subtree has spent.
//
// A step builds a transient agent: never registered, never queued, with
// no goroutine of its own; its events are collected for the step's
// result, and its end is recorded there instead of being published.

// StepAgent is an agent whose loop runs elsewhere, as one step sees it.
type StepAgent struct {
	ID       string
	ParentID string
	Type     string
	Label    string
	// Model is the model's name. Empty means its type's, else
	// ParentModel (its parent's), else Config.DefaultModel: StartStep
	// resolves it, and later steps are given what it resolved.
	Model       string
	ParentModel string
	// Dir is the directory it works in, on this machine.
	Dir string
	// Task is its task as its caller gave it.
	Task string
	// Tools narrows its type's tools, as SpawnRequest.Tools does.
	Tools []string
	// Ancestors are its parent's chain, the top-level agent first: its
	// tools are those of its type that they pass down.
	Ancestors []StepAncestor
	// Budget is its budget, already clamped to what its ancestors let it
	// have; Spent what it and its subtree have spent of it so far.
	Budget          agenttypes.Budget
	Spent           StepSpent
	MaxOutputTokens int
	// MaxDepth is the run's delegation limit (Config.MaxDepth).
	MaxDepth int
	// Retried says the one retry after an unparsable answer was made.
	Retried bool
	// Resumed says the agent continues the conversation of an ended one:
	// StartStep gives no first messages (the backend has them).
	Resumed bool
	// LastText is the model's last text and Notes the agent's notes: a
	// run cut short returns them.
	LastText string
	Notes    []string
	// Run is the run's ID (the manager's that spawned its top-level
	// agent): names that every worker must give alike, its workspace's
	// branch, are made from it.
	Run string
	// Workspace is the handle of its own workspace, once StartStep
	// opened one (StepStart.Workspace): each later step reopens it, so
	// that its tools act on it on whichever worker runs the step.
	// ParentWorkspace is its parent's, which its own starts from.
	Workspace       string `json:",omitempty"`
	ParentWorkspace string `json:",omitempty"`
}

// StepAncestor is one ancestor of a StepAgent.
type StepAncestor struct {
	Type  string
	Tools []string // its narrowing, as StepAgent.Tools
}

// StepSpent is what an agent and its subtree have spent.
type StepSpent struct {
	// Usage and ToolCalls cover the agent and its subtree; Turns are
	// its own model calls.
	Usage     Usage
	ToolCalls int
	Turns     int
}

// StepEnd is how a step ended its agent's run.
type StepEnd struct {
	State   State
	Reason  Reason
	Error   string
	Output  string
	Data    any
	Partial bool
	// TokensOverBudget: see Result.
	TokensOverBudget int
}

// StepStart is a run's beginning: its first messages and what it runs on.
type StepStart struct {
	// Messages are the system prompt and the task, the task as the
	// type's Prompt hook made it.
	Messages []llms.MessageContent
	// Model is the model's name, resolved.
	Model string
	// TypeBudget is the type's budget filled from Config.DefaultBudget,
	// for the backend to fill a child's request from and clamp.
	TypeBudget agenttypes.Budget
	// Workspace is the handle of the workspace opened for the agent, for
	// StepAgent.Workspace; empty when its type changes no files.
	Workspace string
	Events    []Event
	End       *StepEnd
}

// ModelStep is one model call's answer and what it cost.
type ModelStep struct {
	Choice *llms.ContentChoice
	Usage  Usage
	Turn   int
	// Past says the call took the run past a token or cost budget: no
	// further call may be made, and the tool calls it asks for are not
	// run.
	Past bool
	// Over is how many tokens past the token budget the call went.
	Over   int
	Events []Event
	// End is set when the call was refused (a budget used up) or failed
	// in a way that ends the run.
	End *StepEnd
}

// AnswerStep is what an answer with no tool calls did: ended the run, or
// asked for one more turn, with Retry the messages to add.
type AnswerStep struct {
	Retry  []llms.MessageContent
	Events []Event
	End    *StepEnd
}

// ToolStep is one turn's tool calls: the messages they add (the model's
// message and a result per call), the calls counted against the
// tool-call budget, and the calls whose tools act on the tree (delegate,
// collect, ask_parent), which the backend does and then answers with
// TreeStep: their results in Messages are placeholders until then.
type ToolStep struct {
	Messages []llms.MessageContent
	Counted  int
	Tree     []TreeCall
	Notes    []string
	Events   []Event
	End      *StepEnd
}

// TreeCall is a tool call's act on the agent tree, for the backend to
// do: one of Delegate, Collect and CancelGroup is set.
type TreeCall struct {
	// Index is the call's place in the turn, CallID its ID.
	Index    int
	CallID   string
	Tool     string
	Delegate *agenttypes.DelegateRequest `json:",omitempty"`
	Collect  *agenttypes.CollectRequest  `json:",omitempty"`
	// CancelGroup names a background group to cancel.
	CancelGroup string `json:",omitempty"`
	// Ask is a question for the agent's parent (ask_parent).
	Ask *agenttypes.Question `json:",omitempty"`
	// ChildChanges names a child, by label or ID, whose changes the merge
	// tool asks for.
	ChildChanges string `json:",omitempty"`
}

// TreeAnswer is the backend's answer to a TreeCall: the response it
// asked for (none for CancelGroup), or Refusal, why it was refused,
// worded as the manager words its own ("delegation refused: …"), or
// UnknownGroup, for a collect or cancel of a group the agent does not
// have.
type TreeAnswer struct {
	Delegate     *agenttypes.DelegateResponse `json:",omitempty"`
	Collect      *agenttypes.CollectResponse  `json:",omitempty"`
	Refusal      string                       `json:",omitempty"`
	UnknownGroup bool                         `json:",omitempty"`
	// Answer is the answer to Ask (empty when nobody answered), and
	// Unanswered, then, why: said in the agent's answer event.
	Answer     *agenttypes.Answer `json:",omitempty"`
	Unanswered string             `json:",omitempty"`
	// Changes are the changes of the child ChildChanges named (nil: it
	// changed no files).
	Changes *agenttypes.Changes `json:",omitempty"`
}

// ErrTreeDeferred is the error a step agent's tree gives a tool that
// acts on the tree before the backend answered it.
var ErrTreeDeferred = errors.New("tree call deferred to the backend")

// stepState is a transient agent's: what it collects and how it ended.
type stepState struct {
	mu     sync.Mutex
	events []Event
	end    *StepEnd
	// answers are the backend's answers to the tree calls of the call
	// being answered (TreeStep), taken in order; tree the calls made
	// with no answer left.
	answers  []TreeAnswer
	answered bool
	tree     []TreeCall
	// parentWS is the workspace of its nearest ancestor with one
	// (StepAgent.ParentWorkspace), before it has one of its own.
	parentWS agenttypes.Workspace
}

type stepCallKey struct{}

// stepAgent builds the transient agent a step runs on.
func (m *Manager) stepAgent(ctx context.Context, sa StepAgent, resolve bool) (*Agent, error) {
	var parent *Agent
	for i, an := range sa.Ancestors {
		p, err := m.stepBase(ctx, an.Type, an.Tools, parent, i, sa.MaxDepth, false)
		if err != nil {
			return nil, fmt.Errorf("ancestor at depth %d: %w", i, err)
		}
		parent = p
	}
	a, err := m.stepBase(ctx, sa.Type, sa.Tools, parent, len(sa.Ancestors), sa.MaxDepth, true)
	if err != nil {
		return nil, err
	}
	// Its budget was clamped where the tree is kept: here it stands alone.
	a.parent, a.root, a.living = nil, a, 1
	a.id, a.parentID, a.label, a.dir, a.task = sa.ID, sa.ParentID, sa.Label, sa.Dir, sa.Task
	a.budget, a.maxOutput, a.notes = sa.Budget, sa.MaxOutputTokens, sa.Notes
	a.subtree, a.subToolCalls, a.turns = sa.Spent.Usage, sa.Spent.ToolCalls, sa.Spent.Turns
	a.ctx, a.cancel = context.WithCancelCause(ctx)
	if err := m.stepWorkspace(ctx, a, sa); err != nil {
		a.cancel(nil)
		return nil, err
	}
	if resolve {
		a.modelName = sa.Model
		if a.modelName == "" {
			a.modelName = m.modelName(SpawnRequest{}, a.typ, &Agent{modelName: sa.ParentModel})
			if sa.ParentModel == "" {
				a.modelName = m.modelName(SpawnRequest{}, a.typ, nil)
			}
		}
		if a.model, err = m.model(ctx, a.modelName); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// stepBase is a transient agent of typ at depth under parent, with its
// tools.
func (m *Manager) stepBase(ctx context.Context, typeName string, narrow []string, parent *Agent, depth, maxDepth int, own bool) (*Agent, error) {
	typ, err := m.cfg.Registry.Type(typeName)
	if err != nil {
		return nil, err
	}
	if own {
		if err := m.describeMCP(ctx, typ); err != nil {
			return nil, err
		}
	}
	setup, err := m.setup(typ)
	if err != nil {
		return nil, err
	}
	tools, err := m.toolsFor(setup, parent, depth, maxDepth, narrow)
	if err != nil {
		return nil, err
	}
	// gone: it holds no running slot of the manager's and never takes
	// one, not even when its tool calls end.
	a := &Agent{
		m: m, parent: parent, depth: depth, typ: typ, setup: setup, tools: tools, narrowed: len(narrow) > 0,
		done: make(chan struct{}), ready: make(chan struct{}), state: Running, step: &stepState{}, gone: true,
	}
	a.root = a
	if parent != nil {
		a.root = parent.root
	}
	return a, nil
}

// stepContext is the context a step's tools and hooks see.
func (a *Agent) stepContext(ctx context.Context) context.Context {
	return agenttypes.WithEnv(ctx, &agenttypes.Env{AgentID: a.id, Dir: a.dir, Note: a.addNote, Tree: stepTree{a}, Workspace: a.ws})
}

// collected returns the events a step's agent emitted, and its end.
func (a *Agent) collected() ([]Event, *StepEnd) {
	s := a.step
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.events, s.end
}

// StartStep begins a run: it resolves the agent's model and renders its
// first messages. An error is one the run cannot get past (an unknown
// type, a model that cannot be resolved).
func (m *Manager) StartStep(ctx context.Context, sa StepAgent) (StepStart, error) {
	a, err := m.stepAgent(ctx, sa, true)
	if err != nil {
		return StepStart{}, err
	}
	defer a.cancel(nil)
	switch {
	case a.typ.Loop != nil:
		return StepStart{}, fmt.Errorf("%w: type %q runs a loop of its own, which runs in process only for now; run it without a durable backend", ErrBadRequest, a.typ.Name)
	case a.typ.InheritContext && len(sa.Ancestors) > 0:
		return StepStart{}, fmt.Errorf("%w: type %q inherits its parent's conversation, which a durable backend does not pass on yet; run it without one, or turn inherit_context off", ErrBadRequest, a.typ.Name)
	}
	if modelcap.IsRetrievalOnly(a.model) && a.typ.NeedsLanguageModel {
		return StepStart{}, fmt.Errorf("%w: type %q needs a language model, and %q only retrieves", ErrModel, a.typ.Name, a.modelName)
	}
	if a.budget.MaxCostUSD > 0 && !knowsPrice(a.model) {
		return StepStart{}, fmt.Errorf("%w: a cost budget of $%g is set, and model %q has no known price", ErrBadRequest, a.budget.MaxCostUSD, a.modelName)
	}
	out := StepStart{Model: a.modelName, TypeBudget: a.typ.Budget.Merge(m.cfg.DefaultBudget)}
	if sa.Workspace == "" && a.needsWorkspace() {
		if out.Workspace, err = m.openStepWorkspace(ctx, a, sa); err != nil {
			return StepStart{}, err
		}
	}
	l := loop{a: a, ctx: a.stepContext(a.ctx)}
	if !sa.Resumed { // a resumed conversation has its start already
		l.start()
	}
	out.Messages = l.msgs
	out.Events, out.End = a.collected()
	return out, nil
}

// stepTokens is the estimated input of msgs and a's tool definitions.
func (a *Agent) stepTokens(msgs []llms.MessageContent) (input, toolTokens int) {
	toolTokens = a.tools.tokens(a.modelName, a.model)
	input = toolTokens
	for _, msg := range msgs {
		input += countTokens(a.model, messageText(msg)) + perMessageTokens
	}
	return input, toolTokens
}

// GenerateStep makes one model call with the conversation msgs. An error
// is the model's own, for the backend to retry or not by its class; a
// refusal by a budget is an End.
func (m *Manager) GenerateStep(ctx context.Context, sa StepAgent, msgs []llms.MessageContent) (ModelStep, error) {
	a, err := m.stepAgent(ctx, sa, true)
	if err != nil {
		return ModelStep{}, err
	}
	defer a.cancel(nil)
	input, toolTokens := a.stepTokens(msgs)
	r, err := a.generate(a.stepContext(a.ctx), modelCall{msgs: msgs, input: input, tools: a.tools, toolTokens: toolTokens, task: sa.Task, keepFinal: true})
	if stop := asStop(err); stop != nil {
		(&loop{a: a, ctx: a.ctx, lastText: sa.LastText}).end(stop)
		out := ModelStep{Turn: r.turn}
		out.Events, out.End = a.collected()
		return out, nil
	}
	if err != nil {
		return ModelStep{}, err
	}
	out := ModelStep{Choice: r.choice, Usage: r.usage, Turn: r.turn, Past: r.past != nil}
	if r.crossed.agent != nil {
		out.Over = -r.crossed.left
	}
	if r.past != nil && len(r.choice.ToolCalls) > 0 {
		// The tokens or dollars are spent; the tool calls they asked for
		// are not run.
		l := loop{a: a, ctx: a.ctx, lastText: sa.LastText}
		if r.choice.Content != "" {
			l.lastText = r.choice.Content
		}
		l.end(r.past)
	}
	out.Events, out.End = a.collected()
	return out, nil
}

// AnswerStep takes an answer with no tool calls: it parses it into the
// type's output and ends the run, or, for an unparsable answer not yet
// retried, asks for one more turn.
func (m *Manager) AnswerStep(ctx context.Context, sa StepAgent, reply ModelStep) (AnswerStep, error) {
	a, err := m.stepAgent(ctx, sa, true)
	if err != nil {
		return AnswerStep{}, err
	}
	defer a.cancel(nil)
	if reply.Choice == nil {
		return AnswerStep{}, fmt.Errorf("%w: AnswerStep needs the model's answer", ErrBadRequest)
	}
	l := loop{a: a, ctx: a.stepContext(a.ctx), retried: sa.Retried, lastText: sa.LastText}
	r := modelReply{choice: reply.Choice, usage: reply.Usage, turn: reply.Turn}
	if reply.Past {
		r.past = &runStop{reason: ReasonBudgetTokens}
	}
	if reply.Over > 0 {
		r.crossed = treeLimit{agent: a, left: -reply.Over, limit: a.budget.MaxTokens}
	}
	var out AnswerStep
	if !l.final(r) {
		out.Retry = l.msgs[len(l.msgs)-2:]
	}
	out.Events, out.End = a.collected()
	return out, nil
}

// ToolsStep runs one turn's tool calls, as the manager's loop does. A
// call whose tool acts on the tree is not done here: it is returned in
// Tree for the backend, and answered with TreeStep.
func (m *Manager) ToolsStep(ctx context.Context, sa StepAgent, choice *llms.ContentChoice) (ToolStep, error) {
	a, err := m.stepAgent(ctx, sa, true)
	if err != nil {
		return ToolStep{}, err
	}
	defer a.cancel(nil)
	if choice == nil || len(choice.ToolCalls) == 0 {
		return ToolStep{}, fmt.Errorf("%w: ToolsStep needs a model answer with tool calls", ErrBadRequest)
	}
	before := a.subToolCalls
	l := loop{a: a, ctx: a.stepContext(a.ctx), lastText: sa.LastText}
	l.tools(choice)
	out := ToolStep{Messages: l.msgs, Counted: a.subToolCalls - before}
	a.mu.Lock()
	out.Notes = a.notes
	a.mu.Unlock()
	out.Events, out.End = a.collected()
	a.step.mu.Lock()
	out.Tree = a.step.tree
	a.step.mu.Unlock()
	for i := range out.Tree {
		out.Tree[i].Index = slices.IndexFunc(choice.ToolCalls, func(c llms.ToolCall) bool { return c.ID == out.Tree[i].CallID })
	}
	return out, nil
}

// TreeStep is the result text, as the model is given it, of a call whose
// tool acted on the tree, once the backend did what it asked: the tool
// runs again and is given answers, one for each act on the tree it makes,
// in order. When it makes one more than it was given answers for (a
// collect that cancels a group first, then collects it), next is that
// act, for the backend to do and then call TreeStep again with one more
// answer.
func (m *Manager) TreeStep(ctx context.Context, sa StepAgent, call llms.ToolCall, answers []TreeAnswer) (text string, next *TreeCall, events []Event, err error) {
	a, err := m.stepAgent(ctx, sa, false)
	if err != nil {
		return "", nil, nil, err
	}
	defer a.cancel(nil)
	if call.FunctionCall == nil || a.tools.byName[call.FunctionCall.Name] == nil {
		return "", nil, nil, fmt.Errorf("%w: TreeStep: the call names no tool of type %q", ErrBadRequest, a.typ.Name)
	}
	a.step.answers, a.step.answered = answers, true
	o := a.runTool(a.stepContext(a.ctx), call)
	events, _ = a.collected()
	if len(a.step.tree) > 0 {
		tc := a.step.tree[0]
		return "", &tc, events, nil
	}
	return o.text, nil, events, nil
}

// stepTree is a step agent's tree: each act is deferred to the backend,
// and answered by it.
type stepTree struct{ a *Agent }

var _ agenttypes.Tree = stepTree{}

// answer takes the next answer, or defers tc when none is left.
func (t stepTree) answer(ctx context.Context, tc TreeCall) (TreeAnswer, error) {
	s := t.a.step
	tc.CallID, _ = ctx.Value(stepCallKey{}).(string)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.answers) > 0 {
		ans := s.answers[0]
		s.answers = s.answers[1:]
		switch {
		case ans.Refusal != "":
			return ans, &refusal{msg: ans.Refusal}
		case ans.UnknownGroup:
			return ans, fmt.Errorf("%w %q", agenttypes.ErrUnknownGroup, tc.CancelGroup+groupOf(tc))
		}
		return ans, nil
	}
	s.tree = append(s.tree, tc)
	return TreeAnswer{}, ErrTreeDeferred
}

func groupOf(tc TreeCall) string {
	if tc.Collect != nil {
		return tc.Collect.Group
	}
	return ""
}

func (t stepTree) Delegate(ctx context.Context, req agenttypes.DelegateRequest) (*agenttypes.DelegateResponse, error) {
	ans, err := t.answer(ctx, TreeCall{Tool: toolDelegate, Delegate: &req})
	return ans.Delegate, err
}

func (t stepTree) Collect(ctx context.Context, req agenttypes.CollectRequest) (*agenttypes.CollectResponse, error) {
	ans, err := t.answer(ctx, TreeCall{Tool: toolCollect, Collect: &req})
	return ans.Collect, err
}

func (t stepTree) CancelGroup(ctx context.Context, group string) error {
	_, err := t.answer(ctx, TreeCall{Tool: toolCollect, CancelGroup: group})
	return err
}

// AskParent defers the question to the backend, which has the parent
// answer it (QuestionStep), and reports the question and its answer as
// the manager does.
func (t stepTree) AskParent(ctx context.Context, q agenttypes.Question) (agenttypes.Answer, error) {
	ans, err := t.answer(ctx, TreeCall{Tool: toolAskParent, Ask: &q})
	if errors.Is(err, ErrTreeDeferred) {
		return agenttypes.Answer{}, err
	}
	a := t.a
	a.emit(&Event{Kind: EventQuestion, Text: q.Text})
	ev := Event{Kind: EventAnswer, Error: ans.Unanswered}
	var out agenttypes.Answer
	if ans.Answer != nil {
		out = *ans.Answer
	}
	ev.Text, ev.Tool = out.Text, out.By
	if out.Text == "" && ev.Error == "" {
		ev.Error = "nobody answered"
	}
	a.emit(&ev)
	return out, err
}

// ChildQuestion is a child's question, for its parent to answer
// (QuestionStep).
type ChildQuestion struct {
	ChildID, Label, Type string
	Question             agenttypes.Question
}

// QuestionAnswer is what answering a child's question gave, and what it
// cost the parent: a call of its model, when its model answered.
type QuestionAnswer struct {
	Answer agenttypes.Answer
	Usage  Usage
	Turn   int
	Events []Event
}

// QuestionStep answers a child's question on its parent's behalf, as the
// manager does: the manager's question handler first, then the parent's
// model (one call, with conv, the parent's conversation so far, counted
// to the parent), then Config.AskUser. sa is the parent.
func (m *Manager) QuestionStep(ctx context.Context, sa StepAgent, conv []llms.MessageContent, q ChildQuestion) (QuestionAnswer, error) {
	p, err := m.stepAgent(ctx, sa, true)
	if err != nil {
		return QuestionAnswer{}, err
	}
	defer p.cancel(nil)
	ctyp, err := m.cfg.Registry.Type(q.Type)
	if err != nil {
		return QuestionAnswer{}, err
	}
	p.history = conv
	child := &Agent{m: m, id: q.ChildID, parentID: p.id, parent: p, root: p.root, depth: p.depth + 1, typ: ctyp, label: q.Label,
		done: make(chan struct{}), ready: make(chan struct{}), state: Running, step: &stepState{}, gone: true}
	before := p.subtree
	qctx, cancel := context.WithTimeout(p.stepContext(p.ctx), m.cfg.QuestionTimeout)
	defer cancel()
	ans, err := child.answer(qctx, q.Question)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return QuestionAnswer{}, err
	}
	out := QuestionAnswer{Answer: ans, Turn: p.turns, Usage: Usage{
		InputTokens: p.subtree.InputTokens - before.InputTokens, OutputTokens: p.subtree.OutputTokens - before.OutputTokens,
		CostUSD: p.subtree.CostUSD - before.CostUSD, Estimated: p.subtree.Estimated,
	}}
	out.Events, _ = p.collected()
	return out, nil
}

// ChildChanges defers to the backend, which knows the agent's
// children and their changes.
func (t stepTree) ChildChanges(ctx context.Context, child string) (*agenttypes.Changes, error) {
	ans, err := t.answer(ctx, TreeCall{Tool: toolMerge, ChildChanges: child})
	return ans.Changes, err
}

func (s *stepState) collect(e *Event) {
	s.mu.Lock()
	s.events = append(s.events, *e)
	s.mu.Unlock()
}

func (s *stepState) ended(to State, reason Reason, err error, output string, data any, partial bool, over int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.end != nil {
		return
	}
	s.end = &StepEnd{State: to, Reason: reason, Output: output, Data: data, Partial: partial, TokensOverBudget: over}
	if err != nil {
		s.end.Error = err.Error()
	}
}

// StoppedEnd is how a run whose loop runs elsewhere ends when it is
// stopped between steps: by its time budget (timeUp), or cancelled.
func StoppedEnd(sa StepAgent, timeUp bool) StepEnd {
	end := StepEnd{State: Cancelled, Reason: ReasonCancelled, Partial: true, Output: partialText(sa.LastText, sa.Notes),
		Error: fmt.Errorf("agent cancelled: %w", context.Canceled).Error()}
	if timeUp {
		end.State, end.Reason = Failed, ReasonBudgetTime
		end.Error = fmt.Errorf("%w: time budget of %s used up: %w", ErrBudgetExceeded, sa.Budget.MaxTime, context.DeadlineExceeded).Error()
	}
	return end
}

// refusal is a backend's refusal of a tree call, in its own words.
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }
func (r *refusal) Unwrap() error { return ErrDelegation }
