package temporal

import (
	"context"
	"sync"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/troupe-dev/troupe/manager"
)

// A follower brings a run's events to the client from the workflows'
// histories, which the server streams as they grow (a long poll): each
// step's events are in its result, a child's spawn is its parent's start
// of a child workflow, and an agent's end is its workflow's. Following a
// run so costs its workers nothing and adds nothing to its history.

// drainTime bounds how long the follower waits, once the run has ended,
// for the histories of agents it has not read to the end.
const drainTime = 5 * time.Second

type follower struct {
	history func(ctx context.Context, id, runID string) client.HistoryEventIterator
	dc      converter.DataConverter
	publish func(manager.Event)
	root    string
	rootRun string
	mu      sync.Mutex // publish is called by one goroutine at a time
	wg      sync.WaitGroup
}

// newFollower follows the run of agent root, whose first workflow run is
// rootRun.
func newFollower(c client.Client, root, rootRun string, publish func(manager.Event)) *follower {
	if publish == nil {
		publish = func(manager.Event) {}
	}
	history := func(ctx context.Context, id, runID string) client.HistoryEventIterator {
		return c.GetWorkflowHistory(ctx, id, runID, true, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	}
	return &follower{history: history, dc: converter.GetDefaultDataConverter(), publish: publish, root: root, rootRun: rootRun}
}

// start follows the run until the returned func is called, and then
// until every agent's history was read to its end or drain passed.
func (f *follower) start(ctx context.Context) (stop func(drain time.Duration)) {
	ctx, cancel := context.WithCancel(ctx)
	_ = f.follow(ctx, f.root, f.rootRun, agentInput{})
	return func(drain time.Duration) {
		done := make(chan struct{})
		go func() { f.wg.Wait(); close(done) }()
		t := time.NewTimer(drain)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
		}
		cancel()
		<-done
	}
}

// follow reads one agent's history to its end, from its workflow run
// runID on, in a goroutine of its own, and returns a channel closed when
// it has; in is what its parent started it with (zero for the run's own
// agent).
func (f *follower) follow(ctx context.Context, id, runID string, in agentInput) <-chan struct{} {
	done := make(chan struct{})
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer close(done)
		a := &agentFollow{in: in, runID: runID}
		var last int64 // the ID of the last event read
		for wait := time.Duration(0); ; wait = min(max(2*wait, 20*time.Millisecond), time.Second) {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return
			}
			// A history is read again from its start after an error (a
			// child's workflow not started yet, the cluster unreachable
			// for a while), past the events already read; a run that
			// went on in a new workflow run is read on there.
			it := f.history(ctx, id, a.runID)
			for it.HasNext() {
				e, err := it.Next()
				if err != nil {
					break
				}
				if e.GetEventId() <= last {
					continue
				}
				last, wait = e.GetEventId(), 0
				if f.read(ctx, e, a) {
					return
				}
				if next := e.GetWorkflowExecutionContinuedAsNewEventAttributes().GetNewExecutionRunId(); next != "" {
					a.runID, a.continued, last = next, true, 0
					break
				}
			}
		}
	}()
	return done
}

// agentFollow is what the follower knows of one agent.
type agentFollow struct {
	in       agentInput
	children []<-chan struct{} // closed when a child's history was read
	// starting are the children whose workflows were asked to start,
	// by the ID of the event that asked.
	starting map[int64]agentInput
	// runID is the workflow run read: the first, then each it went on
	// in; continued says it is not the first.
	runID     string
	continued bool
}

// read publishes what one history event says; true means the agent
// ended.
func (f *follower) read(ctx context.Context, e *historypb.HistoryEvent, a *agentFollow) bool {
	in := &a.in
	switch e.GetEventType() {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
		f.decode(e.GetWorkflowExecutionStartedEventAttributes().GetInput(), in)
		if !a.continued {
			f.send(agentEvent(in, manager.Event{Kind: manager.EventState, From: manager.Pending, State: manager.Running}))
		}
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
		var out struct{ Events []manager.Event }
		if f.decode(e.GetActivityTaskCompletedEventAttributes().GetResult(), &out) {
			f.send(out.Events...)
		}
	case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
		var child agentInput
		if !f.decode(e.GetStartChildWorkflowExecutionInitiatedEventAttributes().GetInput(), &child) {
			return false
		}
		c := &child.Agent
		f.send(manager.Event{Kind: manager.EventSpawned, AgentID: c.ID, ParentID: c.ParentID, Type: c.Type, Label: c.Label,
			Group: child.Group, Depth: len(c.Ancestors), State: manager.Pending, Text: c.Task})
		if a.starting == nil {
			a.starting = map[int64]agentInput{}
		}
		a.starting[e.GetEventId()] = child
	case enumspb.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
		// Followed from its first workflow run, which this names.
		attrs := e.GetChildWorkflowExecutionStartedEventAttributes()
		if child, ok := a.starting[attrs.GetInitiatedEventId()]; ok {
			delete(a.starting, attrs.GetInitiatedEventId())
			a.children = append(a.children, f.follow(ctx, child.Agent.ID, attrs.GetWorkflowExecution().GetRunId(), child))
		}
	case enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED:
		attrs := e.GetStartChildWorkflowExecutionFailedEventAttributes()
		if child, ok := a.starting[attrs.GetInitiatedEventId()]; ok {
			delete(a.starting, attrs.GetInitiatedEventId())
			f.ended(ctx, &agentFollow{in: child}, manager.StepEnd{State: manager.Failed, Reason: manager.ReasonBackend,
				Error: "its workflow could not start: " + attrs.GetCause().String()}, manager.Usage{})
		}
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
		var out agentOutput
		f.decode(e.GetWorkflowExecutionCompletedEventAttributes().GetResult(), &out)
		f.ended(ctx, a, out.End, out.Usage)
		return true
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
		f.ended(ctx, a, manager.StepEnd{State: manager.Failed, Reason: manager.ReasonBackend,
			Error: "the agent's workflow " + in.Agent.ID + " ended: " + e.GetEventType().String()}, manager.Usage{})
		return true
	}
	return false
}

// ended publishes an agent's end, after its children's: an agent's
// workflow ends after theirs, and its end is published after their
// events, as in process.
func (f *follower) ended(ctx context.Context, a *agentFollow, end manager.StepEnd, usage manager.Usage) {
	for _, done := range a.children {
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
	in := &a.in
	f.send(agentEvent(in, manager.Event{Kind: manager.EventState, From: manager.Running, State: end.State, Reason: end.Reason, Error: end.Error}),
		agentEvent(in, manager.Event{Kind: manager.EventCompleted, From: manager.Running, State: end.State, Reason: end.Reason,
			Text: end.Output, Usage: usage, Error: end.Error}))
}

// agentEvent is e stamped with the agent's identity.
func agentEvent(in *agentInput, e manager.Event) manager.Event {
	a := &in.Agent
	e.AgentID, e.ParentID, e.Type, e.Label, e.Group, e.Depth = a.ID, a.ParentID, a.Type, a.Label, in.Group, len(a.Ancestors)
	return e
}

func (f *follower) decode(p *commonpb.Payloads, v any) bool {
	return p != nil && f.dc.FromPayloads(p, v) == nil
}

func (f *follower) send(events ...manager.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range events {
		f.publish(e)
	}
}
