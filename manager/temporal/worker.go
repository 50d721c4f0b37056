package temporal

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/stepwire"
	"github.com/troupe-dev/troupe/sdk/fault"
)

// WorkerConfig configures a worker.
type WorkerConfig struct {
	// Manager runs the steps: its registry holds the types, tools,
	// plugins and scripts of the worker's project, its models are the
	// worker's, and its limits and hooks apply to every step.
	Manager *manager.Manager
	// Steps runs the steps instead, for a worker whose manager is in
	// another process (stepwire). Set Manager or Steps.
	Steps stepwire.Stepper
	// TaskQueue is the queue the worker serves; DefaultTaskQueue when
	// empty.
	TaskQueue string
	// Root is the project checkout the worker serves: a run's directory
	// is taken relative to it. Required.
	Root string
	// Checkout names that checkout (its commit, say): a run that names
	// another is refused. Empty serves any.
	Checkout string
	// Options are the SDK's worker options. MaxHeartbeatThrottleInterval
	// defaults to 300 ms here, so that a cancel reaches a model call
	// under way within about that long.
	Options worker.Options
}

// errTypeWorker is the type of the errors a worker gives for a run it
// cannot serve: another checkout, a directory outside its checkout. They
// are never retried. (A type it lacks fails the run's start step.)
const errTypeWorker = "troupe_worker"

// NewWorker returns a worker that runs agent workflows and their steps
// on cfg.TaskQueue; start it with Run or Start.
func NewWorker(c client.Client, cfg WorkerConfig) (worker.Worker, error) {
	steps := cfg.Steps
	if cfg.Manager != nil {
		steps = stepwire.Local{Manager: cfg.Manager}
	}
	if steps == nil {
		return nil, errors.New("temporal: WorkerConfig.Manager is nil; pass the manager whose registry and models the worker runs agents with")
	}
	root, err := filepath.Abs(cfg.Root)
	if cfg.Root == "" || err != nil {
		return nil, fmt.Errorf("temporal: WorkerConfig.Root %q: give the project checkout the worker serves", cfg.Root)
	}
	if cfg.TaskQueue == "" {
		cfg.TaskQueue = DefaultTaskQueue
	}
	if cfg.Options.MaxHeartbeatThrottleInterval == 0 {
		// A model or tool call learns of its run's cancel from the answer
		// to a heartbeat: sent at least this often, a cancel reaches the
		// call within about this long.
		cfg.Options.MaxHeartbeatThrottleInterval = heartbeatEvery
	}
	w := worker.New(c, cfg.TaskQueue, cfg.Options)
	register(w, &activities{steps: steps, root: root, checkout: cfg.Checkout, client: c})
	return w, nil
}

// registrar is where the workflow and activities are registered: a
// worker, or the SDK's test environment.
type registrar interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

func register(r registrar, a *activities) {
	r.RegisterWorkflowWithOptions(agentWorkflow, workflow.RegisterOptions{Name: WorkflowName})
	r.RegisterActivityWithOptions(a.start, activity.RegisterOptions{Name: stepwire.StepStart})
	r.RegisterActivityWithOptions(a.generate, activity.RegisterOptions{Name: stepwire.StepGenerate})
	r.RegisterActivityWithOptions(a.answer, activity.RegisterOptions{Name: stepwire.StepAnswer})
	r.RegisterActivityWithOptions(a.tools, activity.RegisterOptions{Name: stepwire.StepTools})
	r.RegisterActivityWithOptions(a.tree, activity.RegisterOptions{Name: stepwire.StepTree})
	r.RegisterActivityWithOptions(a.question, activity.RegisterOptions{Name: stepwire.StepQuestion})
	r.RegisterActivityWithOptions(a.closeWorkspace, activity.RegisterOptions{Name: stepwire.StepCloseWorkspace})
	r.RegisterActivityWithOptions(conversationActivity(a.client), activity.RegisterOptions{Name: activityConversation})
}

// activities run an agent's steps with the worker's Stepper, once the
// run is known to be the worker's to serve.
type activities struct {
	steps    stepwire.Stepper
	client   client.Client // reads an ended agent's history, to resume it
	root     string
	checkout string
}

// agent is the step's input as this worker runs it: the agent's
// directory in the worker's checkout.
func (a *activities) input(in stepwire.Input) (stepwire.Input, error) {
	if a.checkout != "" && in.Checkout != "" && in.Checkout != a.checkout {
		return in, sdktemporal.NewNonRetryableApplicationError(
			fmt.Sprintf("this worker serves checkout %s and the run needs %s; run a worker on that checkout, or run from this one", a.checkout, in.Checkout),
			errTypeWorker, nil)
	}
	rel := filepath.Clean(filepath.FromSlash(in.Agent.Dir))
	if !filepath.IsLocal(rel) && rel != "." {
		return in, sdktemporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the run's directory %q is not inside the worker's checkout", in.Agent.Dir), errTypeWorker, nil)
	}
	in.Agent.Dir = filepath.Join(a.root, rel)
	return in, nil
}

func (a *activities) start(ctx context.Context, in stepwire.Input) (stepwire.StartOut, error) {
	in, err := a.input(in)
	if err != nil {
		return stepwire.StartOut{}, err
	}
	defer heartbeat(ctx)()
	out, err := a.steps.Start(ctx, in)
	return out, classify(err)
}

func (a *activities) generate(ctx context.Context, in stepwire.Input) (stepwire.GenerateOut, error) {
	in, err := a.input(in)
	if err != nil {
		return stepwire.GenerateOut{}, err
	}
	defer heartbeat(ctx)()
	out, err := a.steps.Generate(ctx, in)
	return out, classify(err)
}

func (a *activities) answer(ctx context.Context, in stepwire.Input) (stepwire.AnswerOut, error) {
	in, err := a.input(in)
	if err != nil {
		return stepwire.AnswerOut{}, err
	}
	out, err := a.steps.Answer(ctx, in)
	return out, classify(err)
}

func (a *activities) tools(ctx context.Context, in stepwire.Input) (stepwire.ToolsOut, error) {
	in, err := a.input(in)
	if err != nil {
		return stepwire.ToolsOut{}, err
	}
	defer heartbeat(ctx)()
	out, err := a.steps.Tools(ctx, in)
	return out, classify(err)
}

func (a *activities) tree(ctx context.Context, in stepwire.Input) (stepwire.TreeOut, error) {
	in, err := a.input(in)
	if err != nil {
		return stepwire.TreeOut{}, err
	}
	out, err := a.steps.Tree(ctx, in)
	return out, classify(err)
}

func (a *activities) question(ctx context.Context, in stepwire.Input) (manager.QuestionAnswer, error) {
	in, err := a.input(in)
	if err != nil {
		return manager.QuestionAnswer{}, err
	}
	defer heartbeat(ctx)()
	out, err := a.steps.Question(ctx, in)
	return out, classify(err)
}

func (a *activities) closeWorkspace(ctx context.Context, in stepwire.Input) (stepwire.CloseOut, error) {
	in, err := a.input(in)
	if err != nil {
		return stepwire.CloseOut{}, err
	}
	defer heartbeat(ctx)()
	out, err := a.steps.CloseWorkspace(ctx, in)
	return out, classify(err)
}

// heartbeatEvery is how often a long step heartbeats: the bound on how
// long a cancel takes to reach a model or tool call under way, for a
// heartbeat an activity under way costs the cluster each time.
const heartbeatEvery = 300 * time.Millisecond

// heartbeat tells the server the worker is alive while a long step runs,
// so that a worker that dies mid-step is noticed within the heartbeat
// timeout rather than the step's; the returned func stops it.
func heartbeat(ctx context.Context) func() {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	every := min(activity.GetInfo(ctx).HeartbeatTimeout/3, heartbeatEvery)
	if every <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// classify makes a step's error one the server retries or not, by its
// class (stepwire.Fault): a model that is rate limited, unavailable or
// unreachable is tried again; a bad request, an unknown type or a
// refused key is not.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var fe *fault.Error
	if !errors.As(err, &fe) {
		fe, _ = stepwire.Fault(err).(*fault.Error)
	}
	switch {
	case fe.Code == fault.Canceled || fe.Code == fault.DeadlineExceeded:
		return err
	case fe.Retryable || fe.Code == fault.Unreachable:
		return sdktemporal.NewApplicationError(fe.Message, string(fe.Code))
	}
	return sdktemporal.NewNonRetryableApplicationError(fe.Message, string(fe.Code), nil)
}
