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
	// Heartbeat is how long a worker may go silent in a model or tool
	// call before the call is given to another worker. Default 10 s.
	Heartbeat time.Duration
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
	f := newFollower(b.cfg.Client, run.ID, run.Publish)
	stopFollow := f.start(bg)
	result := make(chan error, 1)
	var out agentOutput
	go func() { result <- wr.Get(bg, &out) }()
	select {
	case err = <-result:
	case <-ctx.Done():
		if cerr := b.cfg.Client.CancelWorkflow(bg, run.ID, ""); cerr != nil {
			b.cfg.Logger.Warn("cancelling a run", "agent", run.ID, "err", cerr)
		}
		err = <-result
	}
	stopFollow()
	if err != nil {
		return manager.RemoteOutcome{}, fmt.Errorf("run %s: %w", run.ID, err)
	}
	return outcome(out), nil
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
			Budget: run.Budget, MaxOutputTokens: run.MaxOutputTokens, MaxDepth: run.MaxDepth,
		},
		Limits:   limits{MaxChildren: run.MaxChildren, TreeAgents: run.MaxTreeAgents, Heartbeat: b.cfg.Heartbeat},
		Checkout: b.cfg.Checkout,
	}, nil
}

// outcome is a workflow's output as the manager takes it.
func outcome(out agentOutput) manager.RemoteOutcome {
	e := out.End
	return manager.RemoteOutcome{
		State: e.State, Reason: e.Reason, Error: e.Error, Output: e.Output, Data: e.Data, Partial: e.Partial,
		Usage: out.Usage, OwnUsage: out.OwnUsage, ToolCalls: out.ToolCalls, Turns: out.Turns,
		TokensOverBudget: e.TokensOverBudget,
	}
}
