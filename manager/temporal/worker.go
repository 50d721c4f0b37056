package temporal

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/sdk/fault"
)

// WorkerConfig configures a worker.
type WorkerConfig struct {
	// Manager runs the steps: its registry holds the types, tools,
	// plugins and scripts of the worker's project, its models are the
	// worker's, and its limits and hooks apply to every step. Required.
	Manager *manager.Manager
	// TaskQueue is the queue the worker serves; DefaultTaskQueue when
	// empty.
	TaskQueue string
	// Root is the project checkout the worker serves: a run's directory
	// is taken relative to it. Required.
	Root string
	// Checkout names that checkout (its commit, say): a run that names
	// another is refused. Empty serves any.
	Checkout string
	// Options are the SDK's worker options.
	Options worker.Options
}

// errTypeWorker is the type of the errors a worker gives for a run it
// cannot serve: another checkout, a type it lacks, a directory outside
// its checkout. They are never retried.
const errTypeWorker = "troupe_worker"

// NewWorker returns a worker that runs agent workflows and their steps
// on cfg.TaskQueue; start it with Run or Start.
func NewWorker(c client.Client, cfg WorkerConfig) (worker.Worker, error) {
	if cfg.Manager == nil {
		return nil, errors.New("temporal: WorkerConfig.Manager is nil; pass the manager whose registry and models the worker runs agents with")
	}
	root, err := filepath.Abs(cfg.Root)
	if cfg.Root == "" || err != nil {
		return nil, fmt.Errorf("temporal: WorkerConfig.Root %q: give the project checkout the worker serves", cfg.Root)
	}
	if cfg.TaskQueue == "" {
		cfg.TaskQueue = DefaultTaskQueue
	}
	w := worker.New(c, cfg.TaskQueue, cfg.Options)
	register(w, &activities{m: cfg.Manager, root: root, checkout: cfg.Checkout})
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
	r.RegisterActivityWithOptions(a.start, activity.RegisterOptions{Name: activityStart})
	r.RegisterActivityWithOptions(a.generate, activity.RegisterOptions{Name: activityGenerate})
	r.RegisterActivityWithOptions(a.answer, activity.RegisterOptions{Name: activityAnswer})
	r.RegisterActivityWithOptions(a.tools, activity.RegisterOptions{Name: activityTools})
	r.RegisterActivityWithOptions(a.tree, activity.RegisterOptions{Name: activityTree})
}

// activities run an agent's steps on the worker's manager.
type activities struct {
	m        *manager.Manager
	root     string
	checkout string
}

// agent is the step's agent as this worker runs it: its directory in
// the worker's checkout.
func (a *activities) agent(in stepInput) (manager.StepAgent, error) {
	sa := in.Agent
	if a.checkout != "" && in.Checkout != "" && in.Checkout != a.checkout {
		return sa, sdktemporal.NewNonRetryableApplicationError(
			fmt.Sprintf("this worker serves checkout %s and the run needs %s; run a worker on that checkout, or run from this one", a.checkout, in.Checkout),
			errTypeWorker, nil)
	}
	rel := filepath.FromSlash(sa.Dir)
	if filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return sa, sdktemporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the run's directory %q is not inside the worker's checkout", sa.Dir), errTypeWorker, nil)
	}
	sa.Dir = filepath.Join(a.root, rel)
	return sa, nil
}

func (a *activities) start(ctx context.Context, in stepInput) (startOut, error) {
	sa, err := a.agent(in)
	if err != nil {
		return startOut{}, err
	}
	st, err := a.m.StartStep(ctx, sa)
	return startOut{Messages: toMessages(st.Messages), Model: st.Model, TypeBudget: st.TypeBudget, Events: st.Events, End: st.End}, classify(err)
}

func (a *activities) generate(ctx context.Context, in stepInput) (generateOut, error) {
	sa, err := a.agent(in)
	if err != nil {
		return generateOut{}, err
	}
	defer heartbeat(ctx)()
	ms, err := a.m.GenerateStep(ctx, sa, fromMessages(in.Messages))
	return generateOut{Choice: toChoice(ms.Choice), Usage: ms.Usage, Turn: ms.Turn, Past: ms.Past, Over: ms.Over, Events: ms.Events, End: ms.End}, classify(err)
}

func (a *activities) answer(ctx context.Context, in stepInput) (answerOut, error) {
	sa, err := a.agent(in)
	if err != nil || in.Reply == nil {
		return answerOut{}, errors.Join(err, errors.New("no answer to take"))
	}
	as, err := a.m.AnswerStep(ctx, sa, in.Reply.step())
	return answerOut{Retry: toMessages(as.Retry), Events: as.Events, End: as.End}, classify(err)
}

func (a *activities) tools(ctx context.Context, in stepInput) (toolsOut, error) {
	sa, err := a.agent(in)
	if err != nil || in.Reply == nil {
		return toolsOut{}, errors.Join(err, errors.New("no tool calls to run"))
	}
	defer heartbeat(ctx)()
	ts, err := a.m.ToolsStep(ctx, sa, in.Reply.Choice.llm())
	return toolsOut{Messages: toMessages(ts.Messages), Counted: ts.Counted, Tree: ts.Tree, Notes: ts.Notes, Events: ts.Events, End: ts.End}, classify(err)
}

func (a *activities) tree(ctx context.Context, in stepInput) (treeOutput, error) {
	sa, err := a.agent(in)
	if err != nil || in.Call == nil {
		return treeOutput{}, errors.Join(err, errors.New("no tree call to answer"))
	}
	text, events, err := a.m.TreeStep(ctx, sa, in.Call.llm(), in.Response, in.Refusal)
	return treeOutput{Text: text, Events: events}, classify(err)
}

// heartbeat tells the server the worker is alive while a long step runs,
// so that a worker that dies mid-step is noticed within the heartbeat
// timeout rather than the step's; the returned func stops it.
func heartbeat(ctx context.Context) func() {
	if !activity.IsActivity(ctx) {
		return func() {}
	}
	every := activity.GetInfo(ctx).HeartbeatTimeout / 3
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

// classify makes a step's error one the server retries or not: a model
// that is rate limited or unavailable is tried again, a bad request, an
// unknown type or a refused key is not.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var fe *fault.Error
	if errors.As(err, &fe) {
		if fe.Retryable || fe.Code == fault.Unreachable {
			return sdktemporal.NewApplicationError(err.Error(), string(fe.Code))
		}
		return sdktemporal.NewNonRetryableApplicationError(err.Error(), string(fe.Code), nil)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	code := "troupe"
	if errors.Is(err, agenttypes.ErrUnknownType) || errors.Is(err, manager.ErrModel) || errors.Is(err, manager.ErrBadRequest) {
		code = errTypeWorker
	}
	return sdktemporal.NewNonRetryableApplicationError(err.Error(), code, nil)
}
