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
	// long steps call the model, run tools, or open a workspace (its
	// setup commands run then).
	long
	// closing steps record an ended run's workspace: the run's time,
	// which may be over, does not bound them.
	closing
)

// stepTimeouts: a short step that takes a minute is stuck; a long one
// may take as long as the run's time budget allows, up to ten minutes a
// try, and is given to another worker when its own goes silent.
const (
	shortStepTimeout = time.Minute
	longStepTimeout  = 10 * time.Minute
	defaultHeartbeat = 10 * time.Second
	// closeStepTimeout bounds recording a workspace, as the manager's
	// own close is bounded.
	closeStepTimeout = 2 * time.Minute
)

// step runs one activity of the run with its agent as it stands.
func (r *agentRun) step(ctx workflow.Context, name string, kind stepKind, in stepwire.Input, out any) error {
	in.Agent, in.Checkout = r.view(), r.in.Checkout
	in.Agent.Resumed = r.in.ResumeFrom != ""
	opts := workflow.ActivityOptions{
		StartToCloseTimeout: shortStepTimeout,
		RetryPolicy: &sdktemporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    30 * time.Second,
			MaximumAttempts:    5,
		},
	}
	// A step that may touch the workspace is waited for when cancelled,
	// so that the workspace is closed only once nothing acts on it.
	opts.WaitForCancellation = name == stepwire.StepStart || r.sa.Workspace != ""
	if kind != short {
		// A worker that dies in such a step is noticed by its silence,
		// not after the step's whole time.
		opts.StartToCloseTimeout = longStepTimeout
		opts.HeartbeatTimeout = r.in.Limits.Heartbeat
		if opts.HeartbeatTimeout <= 0 {
			opts.HeartbeatTimeout = defaultHeartbeat
		}
	}
	if kind == closing {
		opts.StartToCloseTimeout = closeStepTimeout
	} else if dl := r.deadline(ctx); !dl.IsZero() {
		// A step never outlives the run's time; the clock's cancel ends
		// it at once, this bounds a worker that does not hear it.
		left := dl.Sub(workflow.Now(ctx)) + time.Second
		if left < opts.StartToCloseTimeout {
			opts.StartToCloseTimeout = max(left, time.Second)
		}
	}
	return workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), name, in).Get(ctx, out)
}

// view is the agent as a step sees it: what its running children may
// still spend counted as spent, so that its own calls cannot spend it.
func (r *agentRun) view() manager.StepAgent {
	sa := r.sa
	sa.Spent.Usage.InputTokens += r.held.MaxTokens
	sa.Spent.Usage.CostUSD += r.held.MaxCostUSD
	sa.Spent.ToolCalls += r.held.MaxToolCalls
	return sa
}
