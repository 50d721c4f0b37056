package temporal

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/manager/stepwire"
)

// Resuming: an agent that continues an ended agent's conversation
// (SpawnRequest.Resume, or a delegate task's resume) reads it from the
// ended agent's workflow history, where each model call's input holds
// the conversation so far: the last one's, with the final answer that
// closed it. The history is read by an activity, since workflow code
// reads no history but its own.

// activityConversation reads an ended agent's conversation.
const activityConversation = "troupe.conversation"

// conversation is an ended agent's conversation, for one that resumes it.
type conversation struct {
	Type     string
	Messages []stepwire.Message
}

// conversationOf reads the conversation of the ended agent whose
// workflow is id, from its latest workflow run.
func conversationOf(ctx context.Context, c client.Client, id string) (conversation, error) {
	if c == nil {
		return conversation{}, errors.New("this worker has no client to read histories with")
	}
	dc := converter.GetDefaultDataConverter()
	var conv conversation
	var final string
	closed := false
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return conversation{}, err
		}
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			var in agentInput
			if err := dc.FromPayloads(e.GetWorkflowExecutionStartedEventAttributes().GetInput(), &in); err == nil {
				conv.Type = in.Agent.Type
				if in.Carried != nil && len(conv.Messages) == 0 {
					conv.Messages = in.Carried.Messages
				}
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a := e.GetActivityTaskScheduledEventAttributes()
			var in stepwire.Input
			switch a.GetActivityType().GetName() {
			case stepwire.StepGenerate:
				if dc.FromPayloads(a.GetInput(), &in) == nil {
					conv.Messages, final = in.Messages, ""
				}
			case stepwire.StepAnswer:
				if dc.FromPayloads(a.GetInput(), &in) == nil && in.Reply != nil && in.Reply.Choice != nil {
					final = in.Reply.Choice.Content
				}
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
			closed = true
		}
	}
	if !closed {
		return conversation{}, fmt.Errorf("agent %s has not ended, or did not complete its workflow; resume an agent once it has ended", id)
	}
	if final != "" {
		conv.Messages = append(conv.Messages, stepwire.Message{Role: llms.ChatMessageTypeAI, Parts: []stepwire.Part{{Text: final}}})
	}
	return conv, nil
}

// resume puts the resumed conversation in place, followed by the task.
func (r *agentRun) resume(ctx workflow.Context) error {
	var conv conversation
	opts := workflow.ActivityOptions{StartToCloseTimeout: shortStepTimeout, RetryPolicy: &sdktemporal.RetryPolicy{MaximumAttempts: 3}}
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), activityConversation, r.in.ResumeFrom).Get(ctx, &conv); err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	if conv.Type != r.sa.Type {
		return fmt.Errorf("resume: agent %s is of type %q, not %q", r.in.ResumeFrom, conv.Type, r.sa.Type)
	}
	r.msgs = append(conv.Messages, stepwire.Message{Role: llms.ChatMessageTypeHuman, Parts: []stepwire.Part{{Text: r.sa.Task}}})
	return nil
}

// conversationActivity is the activity that reads a conversation.
func conversationActivity(c client.Client) func(ctx context.Context, id string) (conversation, error) {
	return func(ctx context.Context, id string) (conversation, error) {
		conv, err := conversationOf(ctx, c, id)
		if err != nil && ctx.Err() == nil {
			return conv, sdktemporal.NewNonRetryableApplicationError(err.Error(), errTypeWorker, nil)
		}
		return conv, err
	}
}
