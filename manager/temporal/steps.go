package temporal

import (
	"time"

	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/stepwire"
)

// stepKind sets a step's time limit and retries.
type stepKind int

const (
	// short steps render prompts, parse answers and format results.
	short stepKind = iota
	// long steps call the model or run tools.
	long
)

// stepTimeouts: a short step that takes a minute is stuck; a long one
// may take as long as the run's time budget allows, up to ten minutes a
// try, and is given to another worker when its own goes silent.
const (
	shortStepTimeout = time.Minute
	longStepTimeout  = 10 * time.Minute
	defaultHeartbeat = 10 * time.Second
)

// step runs one activity of the run with its agent as it stands.
func (r *agentRun) step(ctx workflow.Context, name string, kind stepKind, in stepwire.Input, out any) error {
	in.Agent, in.Checkout = r.sa, r.in.Checkout
	opts := workflow.ActivityOptions{
		StartToCloseTimeout: shortStepTimeout,
		RetryPolicy: &sdktemporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    30 * time.Second,
			MaximumAttempts:    5,
		},
	}
	if kind == long {
		opts.StartToCloseTimeout = longStepTimeout
		opts.HeartbeatTimeout = r.in.Limits.Heartbeat
		if opts.HeartbeatTimeout <= 0 {
			opts.HeartbeatTimeout = defaultHeartbeat
		}
	}
	if dl := r.deadline(ctx); !dl.IsZero() {
		// A step never outlives the run's time; the clock's cancel ends
		// it at once, this bounds a worker that does not hear it.
		left := dl.Sub(workflow.Now(ctx)) + time.Second
		if left < opts.StartToCloseTimeout {
			opts.StartToCloseTimeout = max(left, time.Second)
		}
	}
	return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), name, in).Get(ctx, out)
}

// record keeps one event of the agent for its followers.
func (r *agentRun) record(e manager.Event) {
	e.AgentID, e.ParentID, e.Type, e.Label = r.sa.ID, r.sa.ParentID, r.sa.Type, r.sa.Label
	e.Depth = len(r.sa.Ancestors)
	r.keep(e)
}

// keep keeps an event as it is, dropping the oldest beyond maxEvents.
func (r *agentRun) keep(e manager.Event) {
	if len(r.events) == maxEvents {
		n := maxEvents / 4
		r.events = append(r.events[:0], r.events[n:]...)
		r.base += n
	}
	r.events = append(r.events, e)
}

// recordAll keeps the events a step reported.
func (r *agentRun) recordAll(events []manager.Event) {
	for _, e := range events {
		r.keep(e)
	}
}

// maxPageBytes bounds one answer to QueryEvents, well under what a
// query's answer may be.
const maxPageBytes = 1 << 20

// page answers QueryEvents: the events from index from on, as many as
// fit in a page.
func (r *agentRun) page(from int) (eventsPage, error) {
	p := eventsPage{Next: max(from, r.base)}
	if from < r.base {
		p.Dropped = r.base - from
	}
	size := 0
	for i := p.Next - r.base; i >= 0 && i < len(r.events); i++ {
		e := r.events[i]
		n := 256 + len(e.Text) + len(e.Args) + len(e.Error)
		if size+n > maxPageBytes && len(p.Events) > 0 {
			break
		}
		size += n
		p.Events = append(p.Events, e)
		p.Next++
	}
	p.Ended = r.ended && p.Next == r.base+len(r.events)
	return p, nil
}
