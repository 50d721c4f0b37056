package manager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/troupe-dev/troupe/agenttypes"
)

// ErrBackend is wrapped by Result.Err when a Config.Backend could not run
// an agent, or lost it: the cluster unreachable, the run refused by every
// worker.
var ErrBackend = errors.New("agent backend failed")

// ReasonBackend: the backend that ran the agent failed (Config.Backend).
const ReasonBackend Reason = "backend_error"

// Backend runs top-level agents outside this process: on a cluster of
// workers whose runs outlive a worker's crash (the Temporal backend, a
// module of its own, is one). With Config.Backend set, a Manager keeps
// the handle, the lifecycle, the queue and the events of each top-level
// agent here, and the backend runs its loop and its whole subtree there:
// Spawn, Wait, WaitAll, Cancel, Subscribe and OnComplete keep their
// meaning.
type Backend interface {
	// Run runs one top-level agent to its end and returns how it ended.
	// It sends the events of the agent and its descendants to
	// run.Publish as they happen, each agent's in order. When ctx ends,
	// the run and every descendant are cancelled, and Run returns once
	// they have ended or a bound has passed. An error means the backend
	// could not run the agent, or lost it.
	Run(ctx context.Context, run RemoteRun) (RemoteOutcome, error)
}

// RemoteRun is a top-level agent as a Backend is given it: what its
// spawn request said, with the type's and the manager's defaults filled.
type RemoteRun struct {
	// ID is the agent's ID; a backend names its run by it.
	ID string
	// Run is the manager's ID, which the branches of the tree's
	// workspaces are named by (troupe/RUN/AGENT), as in process.
	Run   string
	Type  string
	Task  string
	Label string
	// Model is the model's name, resolved where the run goes: the
	// request's, else the type's, else Config.DefaultModel.
	Model string
	// Dir is the directory the agent works in, as the request gave it.
	Dir string
	// Resume is the ID of an ended agent, of the same type, that ran on
	// the backend too, whose conversation this one continues with Task
	// (SpawnRequest.Resume); empty for a fresh start.
	Resume string
	Budget agenttypes.Budget
	// MaxOutputTokens caps each model call's output; 0: the budget's.
	MaxOutputTokens int
	// MaxDepth, MaxChildren, MaxTreeAgents and MaxBackgroundGroups are
	// the manager's limits on the tree (Config.MaxDepth and the others
	// of those names). The limits on a step (the tool calls run at
	// once, a tool result's size) are those of the manager that runs it,
	// where the backend runs it.
	MaxDepth, MaxChildren, MaxTreeAgents, MaxBackgroundGroups int
	// QuestionTimeout bounds how long a child's ask_parent waits for an
	// answer (Config.QuestionTimeout).
	QuestionTimeout time.Duration
	// Publish hands an event to the manager, which numbers it, timestamps
	// it and sends it to subscribers and the transcript. Events of the
	// agent itself get its identity stamped; its lifecycle (spawned,
	// state, completed) is the manager's, so such events of the agent
	// itself are dropped. Safe for one goroutine at a time.
	Publish func(Event) `json:"-"`
}

// RemoteOutcome is how a run on a Backend ended.
type RemoteOutcome struct {
	// Model is the model the run was made with, as the backend resolved
	// it; empty keeps the name the manager sent.
	Model   string
	State   State
	Reason  Reason
	Error   string
	Output  string
	Data    any
	Partial bool
	// Usage covers the agent and its subtree; OwnUsage the agent alone.
	Usage, OwnUsage  Usage
	ToolCalls, Turns int
	TokensOverBudget int
	// Changes are what the agent changed in its workspace, recorded on
	// its branch by the backend's workers, for a type that changes files.
	Changes *agenttypes.Changes
}

// err is the outcome's error for errors.Is, from its reason.
func (o *RemoteOutcome) err() error {
	if o.State == Completed {
		return nil
	}
	var base error
	switch o.Reason {
	case ReasonBudgetTokens, ReasonBudgetTime, ReasonBudgetToolCalls, ReasonBudgetTurns, ReasonBudgetCost:
		base = ErrBudgetExceeded
	case ReasonBadOutput:
		base = ErrBadOutput
	case ReasonScript:
		base = ErrScript
	case ReasonToolPanic:
		base = ErrToolPanic
	case ReasonPluginExited:
		base = ErrPluginExited
	case ReasonBackend:
		base = ErrBackend
	case ReasonCancelled, ReasonShutdown:
		base = context.Canceled
	}
	msg := o.Error
	if msg == "" {
		msg = string(o.Reason)
	}
	return &remoteError{msg: msg, class: base}
}

// remoteError is an error that came from a backend as text: its message
// as the backend wrote it, and its class, from the run's reason, for
// errors.Is.
type remoteError struct {
	msg   string
	class error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.class }

// remote reports whether the agent's run goes to the backend: a
// top-level agent, with one configured.
func (a *Agent) remote() bool { return a.m.cfg.Backend != nil && a.parent == nil }

// runRemote is run for an agent whose loop the backend runs.
func (a *Agent) runRemote(ctx context.Context) {
	run := RemoteRun{
		ID: a.id, Run: a.m.id, Type: a.typ.Name, Task: a.task, Label: a.label, Model: a.modelName,
		Dir: a.dir, Budget: a.budget, MaxOutputTokens: a.maxOutput, Resume: a.resumedID(),
		MaxDepth: a.m.cfg.MaxDepth, MaxChildren: a.m.cfg.MaxChildren, MaxTreeAgents: a.m.cfg.MaxTreeAgents,
		MaxBackgroundGroups: a.m.cfg.MaxBackgroundGroups, QuestionTimeout: a.m.cfg.QuestionTimeout,
		Publish: a.relay,
	}
	out, err := a.m.cfg.Backend.Run(ctx, run)
	if err != nil {
		if ctx.Err() != nil {
			// Cancelled here; what the backend could not confirm is said.
			state, reason, cerr := a.stopOutcome(context.Cause(ctx))
			a.finish(state, reason, fmt.Errorf("%w; the backend: %w", cerr, err), "", nil, true)
			return
		}
		a.finish(Failed, ReasonBackend, fmt.Errorf("%w: %w", ErrBackend, err), "", nil, true)
		return
	}
	a.budgetMu.Lock()
	a.mu.Lock()
	a.usage, a.subtree = out.OwnUsage, out.Usage
	a.toolCalls, a.subToolCalls, a.turns = out.ToolCalls, out.ToolCalls, out.Turns
	a.remoteChanges = out.Changes
	if out.Model != "" {
		a.modelName = out.Model
	}
	a.mu.Unlock()
	a.budgetMu.Unlock()
	state, reason, err := out.State, out.Reason, out.err()
	switch {
	case !state.Terminal():
		state, reason = Failed, ReasonBackend
		out.Error = fmt.Sprintf("the backend returned state %q, which is not an end", out.State)
		err = out.err()
	case state == Cancelled && ctx.Err() != nil:
		// Said as in process: why it was cancelled (the manager closing,
		// the agent's own cancel).
		_, reason, err = a.stopOutcome(context.Cause(ctx))
	}
	a.finishWith(state, reason, err, out.Output, out.Data, out.Partial, out.TokensOverBudget)
}

// relay publishes an event the backend reports: the agent's own with its
// identity, a descendant's as the backend stamped it.
func (a *Agent) relay(e Event) {
	if e.AgentID == "" || e.AgentID == a.id {
		switch e.Kind {
		case EventSpawned, EventState, EventCompleted:
			return
		}
		a.emit(&e)
		return
	}
	if !a.observed() {
		return
	}
	a.emitMu.Lock()
	defer a.emitMu.Unlock()
	e.Time = a.m.cfg.now()
	a.m.events.publish(&e)
	if a.m.transcripts != nil {
		a.m.transcripts.addTo(a.tshard, &e, nil) // a descendant's: not named by a's ident
	}
}

// resumedID is the ID of the agent whose conversation this one continues.
func (a *Agent) resumedID() string {
	if a.resumed == nil {
		return ""
	}
	return a.resumed.id
}
