package manager

import (
	"container/list"
	"context"
	"errors"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
)

var (
	errCancelled = errors.New("agent cancelled")
	errShutdown  = errors.New("manager closed")
)

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

	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
	ready  chan struct{} // closed once the spawned event is out
	elem   *list.Element // in the manager's queue while pending; guarded by m.mu

	transcript *transcript // nil when transcripts are off

	mu        sync.Mutex
	state     State
	started   time.Time
	ended     time.Time
	usage     Usage
	toolCalls int
	turns     int
	notes     []string
	result    Result
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
	Usage     Usage             `json:"usage"`
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
		Task: a.task, Dir: a.dir, Model: a.modelName, State: a.state, Reason: a.result.Reason,
		Budget: a.budget, Usage: a.usage, ToolCalls: a.toolCalls, Turns: a.turns,
		Created: a.created, Started: a.started, Ended: a.ended,
	}
}

// Wait blocks until the agent ends or ctx is done.
func (a *Agent) Wait(ctx context.Context) (Result, error) {
	select {
	case <-a.done:
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.result, nil
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
}

// Cancel stops the agent: a pending agent is cancelled at once, a running
// one as soon as its current model or tool call returns to the loop.
func (a *Agent) Cancel() {
	a.cancel(errCancelled)
	if a.m.dequeue(a) {
		// It never started, so no goroutine will end it.
		<-a.ready
		reason := ReasonCancelled
		if errors.Is(context.Cause(a.m.base), errShutdown) {
			reason = ReasonShutdown
		}
		a.finish(Cancelled, reason, context.Canceled, "", nil, false)
	}
}

// transition moves the agent to a non-terminal state if the lifecycle
// allows it, and reports whether it did. finish makes terminal moves; the
// two are the only places state changes, and both check CanTransition.
func (a *Agent) transition(to State) (from State, ok bool) {
	now := a.m.cfg.now()
	a.mu.Lock()
	from = a.state
	if !CanTransition(from, to) {
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
// and tells everyone who waits.
func (a *Agent) finish(to State, reason Reason, err error, output string, data any, partial bool) {
	now := a.m.cfg.now()
	// The state and the result change under one lock, so no snapshot
	// shows a terminal state without its reason.
	a.mu.Lock()
	from := a.state
	if !CanTransition(from, to) {
		a.mu.Unlock()
		return
	}
	a.state, a.ended = to, now
	r := Result{
		ID: a.id, Type: a.typ.Name, Model: a.modelName, State: to, Reason: reason,
		Partial: partial, Output: output, Data: data, Err: err,
		Usage: a.usage, ToolCalls: a.toolCalls, Turns: a.turns,
	}
	if err != nil {
		r.Error = err.Error()
	}
	if !a.started.IsZero() {
		r.Duration = a.ended.Sub(a.started)
	}
	if a.transcript != nil {
		r.Transcript = a.transcript.path
	}
	a.result = r
	a.mu.Unlock()
	a.m.counts[from].Add(-1)
	a.m.counts[to].Add(1)
	a.m.busyNanos.Add(int64(r.Duration))

	if a.observed() {
		a.emit(&Event{Kind: EventState, From: from, State: to, Reason: reason, Error: r.Error})
		a.emit(&Event{Kind: EventCompleted, State: to, Reason: reason, Text: output, Usage: r.Usage, Error: r.Error})
	}
	if a.transcript != nil {
		a.transcript.close()
	}
	a.cancel(nil)
	a.m.retire(a) // before done closes, so a waiter sees the manager settled
	close(a.done)
	// Callbacks before Done, so that Close returns only after every
	// callback has run.
	a.m.runCallbacks(a.Info())
	a.m.wg.Done()
}

func (m *Manager) runCallbacks(info Info) {
	m.callbacksMu.RLock()
	cbs := m.callbacks
	m.callbacksMu.RUnlock()
	for _, fn := range cbs {
		func() {
			defer func() {
				if p := recover(); p != nil {
					m.cfg.Logger.Error("OnComplete callback panicked", "agent", info.ID, "panic", p, "stack", string(debug.Stack()))
				}
			}()
			fn(info)
		}()
	}
}

// observed reports whether anyone will see events: a subscriber or a
// transcript. Events are not built when nobody will.
func (a *Agent) observed() bool {
	return a.transcript != nil || a.m.events.active()
}

// emit stamps e with the agent's identity and sends it to the transcript
// and the subscribers.
func (a *Agent) emit(e *Event) {
	if !a.observed() {
		return
	}
	e.Time = a.m.cfg.now()
	e.AgentID = a.id
	e.ParentID = a.parentID
	e.Type = a.typ.Name
	a.m.events.publish(e)
	if a.transcript != nil {
		a.transcript.write(e, a.m.cfg.Logger)
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
