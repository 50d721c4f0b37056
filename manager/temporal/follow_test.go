package temporal

import (
	"context"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/troupe-dev/troupe/manager"
)

func payloads(t *testing.T, v any) *commonpb.Payloads {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayloads(v)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A follower that first reads an agent after its workflow went on in a
// new workflow run still gets the events of the runs before it: it reads
// from the first run, which it is told, on.
func TestFollowerReadsEveryWorkflowRunOfAnAgent(t *testing.T) {
	const id = "agent"
	in := agentInput{Agent: manager.StepAgent{ID: id, Type: "lead"}}
	started := func(run string) *historypb.HistoryEvent {
		return &historypb.HistoryEvent{EventId: 1, EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
			Attributes: &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{
				Input: payloads(t, in), OriginalExecutionRunId: run, FirstExecutionRunId: "r1"}}}
	}
	call := func(text string) *historypb.HistoryEvent {
		out := struct{ Events []manager.Event }{Events: []manager.Event{{Kind: manager.EventModelCall, AgentID: id, Text: text}}}
		return &historypb.HistoryEvent{EventId: 5, EventType: enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
			Attributes: &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{ActivityTaskCompletedEventAttributes: &historypb.ActivityTaskCompletedEventAttributes{
				Result: payloads(t, out)}}}
	}
	run1 := []*historypb.HistoryEvent{started("r1"), call("first run"),
		{EventId: 9, EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
			Attributes: &historypb.HistoryEvent_WorkflowExecutionContinuedAsNewEventAttributes{WorkflowExecutionContinuedAsNewEventAttributes: &historypb.WorkflowExecutionContinuedAsNewEventAttributes{NewExecutionRunId: "r2"}}}}
	run2 := []*historypb.HistoryEvent{started("r2"), call("second run"),
		{EventId: 9, EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
			Attributes: &historypb.HistoryEvent_WorkflowExecutionCompletedEventAttributes{WorkflowExecutionCompletedEventAttributes: &historypb.WorkflowExecutionCompletedEventAttributes{
				Result: payloads(t, agentOutput{End: manager.StepEnd{State: manager.Completed}})}}}}
	var calls []string
	f := newFollower(nil, id, "r1", func(e manager.Event) {
		if e.Kind == manager.EventModelCall {
			calls = append(calls, e.Text)
		}
	})
	f.history = func(_ context.Context, _, runID string) client.HistoryEventIterator {
		switch runID {
		case "r1":
			return &recordedHistory{events: run1}
		case "r2":
			return &recordedHistory{events: run2}
		default: // the latest run: the agent went on before it was first read
			return &recordedHistory{events: run2}
		}
	}
	f.start(context.Background())(drainTime)
	if len(calls) != 2 {
		t.Fatalf("model calls followed: %q; want the first run's and the second's", calls)
	}
}
