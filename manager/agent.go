package manager

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tmc/langchaingo/llms"
	"go.opentelemetry.io/otel/trace"

	"github.com/troupe-dev/troupe/agenttypes"
)

// errShutdown is the cause of every agent's end when the manager closes.
var errShutdown = errors.New("manager closed")

// stopCause is why an agent's context was cancelled: the agent itself was
// cancelled, or it ended. Children's contexts derive from their parent's,
// so a child sees its ancestor's stopCause and can say which one stopped it.
type stopCause struct {
	agent string
	ended bool  // the agent ended (it was not cancelled)
	state State // how it ended, when ended
}

func (c *stopCause) Error() string {
	if c.ended {
		return fmt.Sprintf("agent %s ended (%s)", c.agent, c.state)
	}
	return fmt.Sprintf("agent %s was cancelled", c.agent)
}

// Agent is the handle of one run of a type on a task.
type Agent struct {
	m         *Manager
	id        string
	parentID  string
	depth     int
	typ       *agenttypes.Type
	tools     *toolset
	task      string
	label     string
	dir       string
	model     llms.Model
	modelName string
	budget    agenttypes.Budget
	created   time.Time

	parent    *Agent // nil for a top-level agent
	root      *Agent // the top-level agent of its tree; itself at depth 0
	setup     *typeSetup
	maxOutput int    // cap on each model call's output; 0: the budget's
	narrowed  bool   // its request narrowed its tools (SpawnRequest.Tools)
	resumed   *Agent // the ended agent whose conversation this one continues
	// onQuestion answers this agent's children's questions first.
	onQuestion QuestionHandler
	group      *Group // the group it was spawned in, if any
	// ws is its own workspace, for a type that changes files; dir is
	// then the workspace's directory.
	ws agenttypes.Workspace
	// remoteChanges are the changes a backend's workers recorded for a
	// top-level agent they ran, which has no workspace here.
	remoteChanges *agenttypes.Changes
	// children counts the children it spawned; alive, on a root, its
	// descendants that have not ended.
	children atomic.Int32
	alive    atomic.Int32
	// attached is set on a child its parent's end waits for (all but
	// detached ones); live counts such children of this agent that have
	// not ended, and liveZero is closed when live falls to zero.
	// recorded says its result is recorded, and settled that its
	// subtree had ended by then or has since.
	attached bool
	liveMu   sync.Mutex
	live     int
	liveZero chan struct{}
	recorded bool
	settled  bool

	ctx    context.Context // derives from the parent's, so cancelling reaches the subtree
	cancel context.CancelCauseFunc
	// stopWatch stops the watch that ends the agent when its context is
	// cancelled while it waits in the queue.
	stopWatch func() bool
	done      chan struct{}
	ready     chan struct{} // closed once the spawned event is out

	// Guarded by m.mu: the agent's place in the queue while pending,
	// whether it holds a running slot, how many of its waits lend that
	// slot out, and, while it waits to take a slot back, the channel
	// closed when it has one and its place in the line of resuming agents.
	queued       bool // in m.queue, linked through qprev and qnext
	qprev, qnext *Agent
	held         bool        // registered, but held back by its group's concurrency
	waits        []*slotWait // waits on this agent by agents lending their slot
	slot         atomic.Bool // written under m.mu; read without it by leaveTools
	lent         int
	resume       chan struct{}
	resumeElem   *list.Element
	tooling      atomic.Int32 // tool phases in progress (0 or 1), counted without m.mu
	gone         bool         // terminal: its slot released for good
	runCtx       context.Context

	// budgetMu, on a tree's root, makes checking and taking a tree's
	// tokens and tool calls one step; freed, when set, is closed when a
	// model call in flight in the tree gives back its reservation.
	budgetMu sync.Mutex
	freed    chan struct{}

	// emitMu makes numbering and writing one agent's events one step, so
	// its transcript is in Seq order; tshard is the transcript buffer its
	// lines go to; tident, the fields that name the agent in each line,
	// encoded once (under emitMu).
	emitMu sync.Mutex
	tshard int
	tident []byte

	// step is set on the transient agent of a step (StepAgent), whose
	// events and end go to the step's result.
	step *stepState

	mu        sync.Mutex
	state     State
	ending    bool // a finish is under way: later ones, and a start, give way
	started   time.Time
	ended     time.Time
	usage     Usage // its own model calls
	toolCalls int   // its own tool calls
	// subtree and subToolCalls count it and every descendant: what its
	// budget bounds. They change only with its root's budgetMu held too,
	// and whoever holds that reads them without mu.
	subtree      Usage
	subToolCalls int
	// Guarded by its root's budgetMu, not mu: the tokens held by model
	// calls in flight in its subtree, how many such calls there are, and
	// how many agents of its subtree (itself included) have not ended,
	// which is how many may want a share of what it has left. counted
	// says whether it is among its ancestors' living; uncounted, that it
	// ended.
	reserved    int
	reservedUSD float64
	calls       int
	living      int
	counted     bool
	uncounted   bool
	groups      []*Group // the groups it spawned
	bgSpawning  int      // background groups being spawned, not yet in groups
	turns       int
	notes       []string
	// result is set, once, as the agent ends: a pending or running
	// agent does not carry its room.
	result *Result
	// span is its invoke_agent span when spans are on, set (under mu)
	// before ready closes, and ended by finish; its own goroutines read
	// it without mu.
	span trace.Span
	// history is the conversation so far, for children whose type
	// inherits it. Messages below its length are never changed.
	history []llms.MessageContent
}

// Info is a snapshot of an agent.
type Info struct {
	ID        string            `json:"id"`
	ParentID  string            `json:"parent_id,omitempty"`
	Depth     int               `json:"depth"`
	Type      string            `json:"type"`
	Label     string            `json:"label,omitempty"`
	Task      string            `json:"task"`
	Dir       string            `json:"dir,omitempty"`
	Model     string            `json:"model"`
	State     State             `json:"state"`
	Reason    Reason            `json:"reason,omitempty"`
	Budget    agenttypes.Budget `json:"budget"`
	Usage     Usage             `json:"usage"` // the agent and its descendants
	OwnUsage  Usage             `json:"own_usage"`
	ToolCalls int               `json:"tool_calls"`
	Turns     int               `json:"turns"`
	Created   time.Time         `json:"created"`
	Started   time.Time         `json:"started,omitzero"`
	Ended     time.Time         `json:"ended,omitzero"`
}

// ID returns the agent's ID, a UUID.
func (a *Agent) ID() string { return a.id }

// Done is closed when the agent reaches a terminal state.
func (a *Agent) Done() <-chan struct{} { return a.done }

// Info returns a snapshot of the agent.
func (a *Agent) Info() Info {
	a.mu.Lock()
	defer a.mu.Unlock()
	return Info{
		ID: a.id, ParentID: a.parentID, Depth: a.depth, Type: a.typ.Name, Label: a.label,
		Task: a.task, Dir: a.dir, Model: a.modelName, State: a.state, Reason: a.reasonLocked(),
		Budget: a.budget, Usage: a.subtree, OwnUsage: a.usage, ToolCalls: a.toolCalls, Turns: a.turns,
		Created: a.created, Started: a.started, Ended: a.ended,
	}
}

// reasonLocked is why the agent ended, or nothing before; a.mu is held.
func (a *Agent) reasonLocked() Reason {
	if a.result == nil {
		return ""
	}
	return a.result.Reason
}

// Wait blocks until the agent ends or ctx is done. An agent that waits
// for another from one of its tool calls (ctx is the tool's context) gives
// its running slot to others while it waits; see Config.MaxConcurrent.
func (a *Agent) Wait(ctx context.Context) (Result, error) {
	rs, err := a.m.await(ctx, []*Agent{a})
	if err != nil {
		return Result{}, err
	}
	return rs[0], nil
}

// result returns the agent's result; the agent must have ended.
func (a *Agent) resultNow() Result {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.result == nil {
		return Result{}
	}
	return *a.result
}

// Cancel stops the agent and everything it spawned: a pending agent is
// cancelled at once, a running one as soon as its current model or tool
// call returns to the loop.
func (a *Agent) Cancel() {
	a.cancel(&stopCause{agent: a.id})
	a.endIfQueued()
}

// endIfQueued ends an agent whose context was cancelled while it waited in
// the queue; no loop will run to end it. It runs from Cancel and from the
// watch on the agent's context, whichever comes first.
func (a *Agent) endIfQueued() {
	if !a.m.dequeue(a) {
		return
	}
	a.endDequeued()
}

// endDequeued ends an agent taken from the queue because its context ended.
func (a *Agent) endDequeued() {
	<-a.ready
	state, reason, err := a.stopOutcome(context.Cause(a.ctx))
	a.finish(state, reason, err, "", nil, false)
}

// stopOutcome says how a run whose context ended ends: the time budget,
// the manager closing, a cancel of this agent, or an ancestor that was
// cancelled or ended.
func (a *Agent) stopOutcome(cause error) (State, Reason, error) {
	var sc *stopCause
	switch {
	case errors.Is(cause, errTimeBudget):
		return Failed, ReasonBudgetTime, fmt.Errorf("%w: time budget of %s used up: %w", ErrBudgetExceeded, a.budget.MaxTime, context.DeadlineExceeded)
	case errors.Is(cause, errShutdown):
		return Cancelled, ReasonShutdown, fmt.Errorf("manager closed: %w", context.Canceled)
	case errors.As(cause, &sc) && sc.agent != a.id:
		if sc.ended {
			return Cancelled, ReasonCancelled, fmt.Errorf("agent cancelled because %s, ending its subtree: %w", sc, context.Canceled)
		}
		return Cancelled, ReasonCancelled, fmt.Errorf("agent cancelled because %s, with its subtree: %w", sc, context.Canceled)
	}
	return Cancelled, ReasonCancelled, fmt.Errorf("agent cancelled: %w", context.Canceled)
}

// transition moves the agent to a non-terminal state if the lifecycle
// allows it, and reports whether it did. finish makes terminal moves; the
// two are the only places state changes, and both check CanTransition.
func (a *Agent) transition(to State) (from State, ok bool) {
	now := a.m.cfg.now()
	a.mu.Lock()
	from = a.state
	if a.ending || !CanTransition(from, to) {
		a.mu.Unlock()
		return from, false
	}
	a.state = to
	switch {
	case to == Running:
		a.started = now
	case to.Terminal():
		a.ended = now
	}
	a.mu.Unlock()
	a.m.counts[from].Add(-1)
	a.m.counts[to].Add(1)
	return from, true
}

// finish moves the agent to a terminal state once, records its result,
// and tells everyone who waits. The bookkeeping that waiters depend on
// (the slot, the subtree, Done) is done whatever user code does: logger
// handlers and OnComplete callbacks run with their panics recovered.
func (a *Agent) finish(to State, reason Reason, err error, output string, data any, partial bool) {
	a.finishWith(to, reason, err, output, data, partial, 0)
}

func (a *Agent) finishWith(to State, reason Reason, err error, output string, data any, partial bool, overBudget int) {
	if a.step != nil {
		a.step.ended(to, reason, err, output, data, partial, overBudget)
		return
	}
	now := a.m.cfg.now()
	a.mu.Lock()
	if a.ending || !CanTransition(a.state, to) {
		a.mu.Unlock()
		return
	}
	a.ending = true
	a.mu.Unlock()

	// The subtree is told at once. The tree is one unit: the agent ends
	// after its children, so its usage holds all they spent and their
	// events come before its end. Cancelled, they need no slot to end.
	if a.stopWatch != nil {
		a.stopWatch()
	}
	a.cancel(&stopCause{agent: a.id, ended: true, state: to})
	a.awaitChildren()
	a.uncountLiving()
	changes, werr := a.closeWorkspace()
	if werr != nil && to == Completed {
		to, reason, err = Failed, ReasonWorkspace, werr
	}

	r := Result{
		ID: a.id, Type: a.typ.Name, Model: a.modelName, State: to, Reason: reason,
		Partial: partial, Output: output, Data: data, Err: err, TokensOverBudget: overBudget, Changes: changes,
	}
	if a.span != nil {
		r.TraceID = a.span.SpanContext().TraceID().String()
	}
	from, settled := a.record(&r, now)
	a.m.tel.endAgent(a, &r, now)
	// The slot is free once the agent is terminal (an agent waiting for
	// it takes the slot first) and before any callback; after the subtree
	// was told, so a queued child is never started by the slot its
	// parent gave back.
	a.m.releaseSlot(a)

	a.m.guard("publishing the end of agent ", a.id, func() {
		if a.observed() {
			a.emit(&Event{Kind: EventState, From: from, State: to, Reason: reason, Error: r.Error})
			a.emit(&Event{Kind: EventCompleted, From: from, State: to, Reason: reason, Text: output, Usage: r.Usage, Error: r.Error, Changes: r.Changes})
		}
	})
	a.awaitTranscript()
	if a.parent != nil {
		a.root.alive.Add(-1)
	}
	a.m.retire(a) // before done closes, so a waiter sees the manager settled
	close(a.done)
	if a.group != nil {
		a.group.childEnded(a)
	}
	if settled && a.attached {
		a.parent.childGone()
	}
	// Close waits for the callbacks, so wg.Done comes after them.
	defer a.m.wg.Done()
	a.m.runCallbacks(a)
}

// record moves the agent to r.State and records r, filled with what the
// agent counted, as its result: the state and the result change under one
// lock, so no snapshot shows a terminal state without its reason. settled
// says no child outlived the wait for them; otherwise the result is
// brought up to date when the last of them ends.
func (a *Agent) record(r *Result, now time.Time) (from State, settled bool) {
	a.mu.Lock()
	from = a.state
	a.state, a.ended = r.State, now
	r.Usage, r.OwnUsage, r.ToolCalls, r.Turns = a.subtree, a.usage, a.toolCalls, a.turns
	if r.Err != nil {
		r.Error = r.Err.Error()
	}
	if !a.started.IsZero() {
		r.Duration = a.ended.Sub(a.started)
	}
	if a.m.transcripts != nil {
		r.Transcript = a.m.transcripts.path
	}
	a.liveMu.Lock()
	a.recorded = true
	settled = a.live == 0
	a.settled = settled
	a.liveMu.Unlock()
	r.Unsettled = !settled
	if r.State == Completed && a.setup != nil && a.typ.Loop == nil && a.resumed == nil {
		// Before Done closes: the next agent of the type, spawned by a
		// waiter, starts with room for this conversation.
		a.setup.conversation.Store(int32(len(a.history)))
	}
	res := *r // the caller goes on reading r; settle changes the result
	a.result = &res
	a.mu.Unlock()
	a.m.counts[from].Add(-1)
	a.m.counts[r.State].Add(1)
	a.m.busyNanos.Add(int64(r.Duration))
	return from, settled
}

// awaitTranscript waits for the agent's events to be on disk before Done
// closes; the wait is bounded, so a stuck disk cannot hold the agent.
func (a *Agent) awaitTranscript() {
	if a.m.transcripts == nil {
		return
	}
	synced := a.m.transcripts.syncedFor(a.tshard)
	select {
	case <-synced:
		return
	default:
	}
	t, _ := endWaitTimers.Get().(*time.Timer)
	if t == nil {
		t = time.NewTimer(transcriptEndWait)
	} else {
		t.Reset(transcriptEndWait)
	}
	select {
	case <-synced:
	case <-t.C:
		a.m.transcripts.forget(synced)
	}
	if !t.Stop() {
		// Go's timers leave no value behind since 1.23; a program that
		// asks for the old ones (GODEBUG=asynctimerchan=1) gets a tick
		// that fired as synced closed, which the next wait would take.
		select {
		case <-t.C:
		default:
		}
	}
	endWaitTimers.Put(t)
}

// endWaitTimers holds stopped timers for awaitTranscript: nearly every
// ending agent waits for its last lines, and a timer made for each was
// two of the objects an agent allocated.
var endWaitTimers sync.Pool // of *time.Timer

// runCallbacks runs the OnComplete callbacks with a's Info, made only
// when there are some.
func (m *Manager) runCallbacks(a *Agent) {
	m.callbacksMu.RLock()
	cbs := m.callbacks
	m.callbacksMu.RUnlock()
	if len(cbs) == 0 {
		return
	}
	info := a.Info()
	for _, fn := range cbs {
		m.guard("OnComplete callback for agent ", info.ID, func() { fn(info) })
	}
}

// guard runs fn, recovering a panic into an error log, what+of
// "panicked", with its stack. A logger whose handler panics too is itself
// guarded, and then silent. what and of are joined only then: joined by
// the caller, the message was made at every call, for every agent.
func (m *Manager) guard(what, of string, fn func()) {
	defer func() {
		if p := recover(); p != nil {
			stack := string(debug.Stack())
			func() {
				defer func() { _ = recover() }()
				m.cfg.Logger.Error(what+of+" panicked", "panic", p, "stack", stack)
			}()
		}
	}()
	fn()
}

// observed reports whether anyone will see events: a subscriber or a
// transcript. Events are not built when nobody will.
func (a *Agent) observed() bool {
	return a.m.transcripts != nil || a.m.events.active() || a.step != nil
}

// emit stamps e with the agent's identity and sends it to the transcript
// and the subscribers.
func (a *Agent) emit(e *Event) {
	if !a.observed() {
		return
	}
	e.AgentID = a.id
	e.ParentID = a.parentID
	e.Type = a.typ.Name
	e.Label = a.label
	e.Depth = a.depth
	if a.group != nil {
		e.Group = a.group.id
	}
	if a.step != nil {
		a.step.collect(e)
		return
	}
	a.emitMu.Lock()
	defer a.emitMu.Unlock()
	e.Time = a.m.cfg.now()
	a.m.events.publish(e)
	if a.m.transcripts != nil {
		if a.tident == nil {
			a.tident = appendEventIdent(nil, e)
		}
		a.m.transcripts.addTo(a.tshard, e, a.tident)
	}
}

func (a *Agent) addNote(text string) {
	a.mu.Lock()
	a.notes = append(a.notes, text)
	a.mu.Unlock()
	a.emit(&Event{Kind: EventNote, Text: text})
}

func (a *Agent) logger() *slog.Logger {
	return a.m.cfg.Logger.With("agent", a.id, "type", a.typ.Name)
}

// childrenEndWait bounds how long an ending agent waits for its cancelled
// children: one held up by a tool that ignores its context must not hold
// its parent's end (and the parent's waiters) for long.
const childrenEndWait = 2 * time.Second

// childBorn counts a new attached child, unless the agent is ending: under
// a.mu, so a child is either counted before the end starts waiting or
// refused.
func (a *Agent) childBorn() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ending {
		return false
	}
	a.liveMu.Lock()
	a.live++
	a.liveMu.Unlock()
	return true
}

// isEnding reports whether the agent has ended or is ending.
func (a *Agent) isEnding() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ending
}

func (a *Agent) endedError() error {
	return fmt.Errorf("%w: parent %s has ended and can have no more children", ErrBadRequest, a.id)
}

// childGone counts an attached child that was discarded, or that ended
// with its whole subtree. The last one to go after a's result was
// recorded settles it.
func (a *Agent) childGone() {
	a.liveMu.Lock()
	a.live--
	if a.live == 0 && a.liveZero != nil {
		close(a.liveZero)
		a.liveZero = nil
	}
	late := a.live == 0 && a.recorded && !a.settled
	if late {
		a.settled = true
	}
	a.liveMu.Unlock()
	if late {
		a.settle()
	}
}

// settle brings the result of an agent whose children outlived its end
// up to date, now that its whole subtree has ended: its usage holds all
// they spent. An EventSettled says so, and its parent hears the subtree
// has ended.
func (a *Agent) settle() {
	a.mu.Lock()
	a.result.Usage = a.subtree
	a.result.Unsettled = false
	usage := a.subtree
	a.mu.Unlock()
	a.m.guard("publishing the settling of agent ", a.id, func() {
		a.emit(&Event{Kind: EventSettled, Usage: usage, Text: "every agent this one spawned has ended; its usage is final"})
	})
	if a.attached {
		a.parent.childGone()
	}
}

// awaitChildren waits, up to childrenEndWait, for the agent's attached
// children to end; they have been cancelled.
func (a *Agent) awaitChildren() {
	a.liveMu.Lock()
	if a.live == 0 {
		a.liveMu.Unlock()
		return
	}
	if a.liveZero == nil {
		a.liveZero = make(chan struct{})
	}
	zero, n := a.liveZero, a.live
	a.liveMu.Unlock()
	t := time.NewTimer(childrenEndWait)
	defer t.Stop()
	select {
	case <-zero:
	case <-t.C:
		a.logger().Warn("ending with children still running: the result's usage is brought up to date when they end", "children", n, "waited", childrenEndWait)
	}
}
