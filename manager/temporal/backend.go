package temporal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/troupe-dev/troupe/manager"
)

// Config configures a Backend.
type Config struct {
	// Client is the connection to the Temporal cluster. Required.
	Client client.Client
	// TaskQueue is where runs go; DefaultTaskQueue when empty. Its
	// workers must serve the same project checkout.
	TaskQueue string
	// Root is the project checkout runs are made from: a run's directory
	// is sent relative to it, and taken relative to the worker's. Default:
	// the current directory.
	Root string
	// Checkout names that checkout (its commit, say); workers that serve
	// another refuse the run. Empty: any.
	Checkout string
	// CancelWait bounds how long Run waits for a cancelled run to end
	// (a run no worker serves never does). Default 30 s.
	CancelWait time.Duration
	// Heartbeat is how long a worker may go silent in a model or tool
	// call before the call is given to another worker. Default 10 s.
	Heartbeat time.Duration
	// HistoryEvents is how long an agent's workflow history may grow
	// before the agent goes on in a new workflow run (ContinueAsNew),
	// carrying its conversation and budgets. Default 4,096 events, or
	// sooner when the server suggests it.
	HistoryEvents int
	// Logger receives the backend's logs. Default slog.Default().
	Logger *slog.Logger
}

// Backend runs a manager's top-level agents as Temporal workflows: set
// it as manager.Config.Backend.
type Backend struct {
	cfg Config
}

var _ manager.Backend = (*Backend)(nil)

// New returns a Backend.
func New(cfg Config) (*Backend, error) {
	if cfg.Client == nil {
		return nil, errors.New("temporal: Config.Client is nil; dial the cluster with client.Dial and pass the client")
	}
	if cfg.TaskQueue == "" {
		cfg.TaskQueue = DefaultTaskQueue
	}
	if cfg.Root == "" {
		cfg.Root = "."
	}
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("temporal: Config.Root %q: %w", cfg.Root, err)
	}
	cfg.Root = root
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.CancelWait <= 0 {
		cfg.CancelWait = 30 * time.Second
	}
	return &Backend{cfg: cfg}, nil
}

// Run runs one top-level agent as a workflow named by its ID and follows
// its tree's events until it ends. When ctx ends, the workflow is
// cancelled, and with it every child workflow.
func (b *Backend) Run(ctx context.Context, run manager.RemoteRun) (manager.RemoteOutcome, error) {
	in, err := b.input(run)
	if err != nil {
		return manager.RemoteOutcome{}, err
	}
	opts := client.StartWorkflowOptions{
		ID:                       run.ID,
		TaskQueue:                b.cfg.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
	}
	// The run is the cluster's from here: it is started, and later
	// cancelled, on a context of its own, so that a cancel is sent when
	// ctx ends.
	bg := context.WithoutCancel(ctx)
	wr, err := b.cfg.Client.ExecuteWorkflow(bg, opts, WorkflowName, in)
	if err != nil {
		return manager.RemoteOutcome{}, fmt.Errorf("starting the run on task queue %q: %w", b.cfg.TaskQueue, err)
	}
	f := newFollower(b.cfg.Client, run.ID, wr.GetRunID(), run.Publish)
	stopFollow := f.start(bg)
	drain := drainTime
	defer func() { stopFollow(drain) }()
	getCtx, stopGet := context.WithCancel(bg)
	defer stopGet()
	result := make(chan error, 1)
	var out agentOutput
	go func() { result <- wr.Get(getCtx, &out) }()
	select {
	case err = <-result:
	case <-ctx.Done():
		b.cancel(bg, run.ID)
		t := time.NewTimer(b.cfg.CancelWait)
		defer t.Stop()
		select {
		case err = <-result:
		case <-t.C:
			drain = 0 // its events will not come either
			return manager.RemoteOutcome{}, fmt.Errorf("run %s did not end within %s of its cancel (no worker took it?); its workflow was asked to cancel and may still end", run.ID, b.cfg.CancelWait)
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			// The run is lost to this client: it is not left to run,
			// and spend, with nobody waiting for it.
			b.cancel(bg, run.ID)
		}
		return manager.RemoteOutcome{}, fmt.Errorf("run %s: %w", run.ID, err)
	}
	return outcome(out), nil
}

// cancel asks the cluster to cancel a run's workflow, and with it its
// children, within a bound.
func (b *Backend) cancel(ctx context.Context, id string) {
	ctx, done := context.WithTimeout(ctx, 10*time.Second)
	defer done()
	if err := b.cfg.Client.CancelWorkflow(ctx, id, ""); err != nil {
		b.cfg.Logger.Warn("cancelling a run", "agent", id, "err", err)
	}
}

// input is a run's workflow input.
func (b *Backend) input(run manager.RemoteRun) (agentInput, error) {
	dir := run.Dir
	if dir == "" {
		dir = b.cfg.Root
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return agentInput{}, err
	}
	rel, err := filepath.Rel(b.cfg.Root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return agentInput{}, fmt.Errorf("directory %q is outside the checkout %q the backend runs from (Config.Root); run from inside it", dir, b.cfg.Root)
	}
	return agentInput{
		Agent: manager.StepAgent{
			ID: run.ID, Type: run.Type, Label: run.Label, Model: run.Model, Dir: filepath.ToSlash(rel), Task: run.Task,
			Budget: run.Budget, MaxOutputTokens: run.MaxOutputTokens, MaxDepth: run.MaxDepth, Run: run.Run,
		},
		Limits: limits{MaxChildren: run.MaxChildren, MaxBackgroundGroups: run.MaxBackgroundGroups, TreeAgents: run.MaxTreeAgents,
			QuestionTimeout: run.QuestionTimeout, HistoryEvents: b.cfg.HistoryEvents, Heartbeat: b.cfg.Heartbeat},
		Checkout:   b.cfg.Checkout,
		ResumeFrom: run.Resume,
	}, nil
}

// outcome is a workflow's output as the manager takes it.
func outcome(out agentOutput) manager.RemoteOutcome {
	e := out.End
	return manager.RemoteOutcome{
		Model: out.Model, State: e.State, Reason: e.Reason, Error: e.Error, Output: e.Output, Data: e.Data, Partial: e.Partial,
		Usage: out.Usage, OwnUsage: out.OwnUsage, ToolCalls: out.ToolCalls, Turns: out.Turns,
		TokensOverBudget: e.TokensOverBudget, Changes: out.Changes,
	}
}
