//go:build integration

package temporal

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/temporal/internal/devserver"
)

// cluster is a dev server and a client of it.
func cluster(t *testing.T) client.Client {
	t.Helper()
	srv := devserver.Start(t)
	c, err := client.Dial(client.Options{HostPort: srv.HostPort(), Namespace: srv.Namespace(),
		Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// startWorker runs a worker in this process on queue, with a manager of
// model.
func startWorker(t *testing.T, c client.Client, queue, root string, model llms.Model) {
	t.Helper()
	w, err := NewWorker(c, WorkerConfig{Manager: newManager(t, registry(t), model, nil), TaskQueue: queue, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
}

func remoteManager(t *testing.T, c client.Client, queue, root string) *manager.Manager {
	t.Helper()
	b, err := New(Config{Client: c, TaskQueue: queue, Root: root, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return newManager(t, registry(t), nil, b)
}

func run(t *testing.T, m *manager.Manager, task string) manager.Result {
	t.Helper()
	a, err := m.Spawn(context.Background(), manager.SpawnRequest{Type: "lead", Task: task})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := a.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestIntegrationManagerRunsATreeOnTemporalAsInProcess(t *testing.T) {
	c := cluster(t)
	root := t.TempDir()
	startWorker(t, c, "tree", root, treeModel())
	m := remoteManager(t, c, "tree", root)
	sub := m.Subscribe()
	defer sub.Close()

	got := run(t, m, "look into it")
	want := run(t, newManager(t, registry(t), treeModel(), nil), "look into it")
	if got.State != manager.Completed || normal(got.Output) != normal(want.Output) {
		t.Fatalf("on Temporal: %s (%s) %q; in process: %q", got.State, got.Error, got.Output, want.Output)
	}
	if got.Usage != want.Usage || got.OwnUsage != want.OwnUsage || got.Turns != want.Turns || got.ToolCalls != want.ToolCalls {
		t.Errorf("on Temporal: usage %+v own %+v, %d turns, %d tool calls; in process: %+v own %+v, %d turns, %d tool calls",
			got.Usage, got.OwnUsage, got.Turns, got.ToolCalls, want.Usage, want.OwnUsage, want.Turns, want.ToolCalls)
	}

	// The subscriber saw the tree: each child spawned, ran and ended,
	// before the lead ended.
	ended := map[string]bool{}
	spawned := map[string]bool{}
	for e := range sub.C() {
		switch {
		case e.Kind == manager.EventSpawned && e.ParentID == got.ID:
			spawned[e.AgentID] = true
		case e.Kind == manager.EventCompleted && e.AgentID != got.ID:
			ended[e.AgentID] = spawned[e.AgentID] && e.State == manager.Completed
		}
		if e.Kind == manager.EventCompleted && e.AgentID == got.ID {
			break
		}
	}
	if len(spawned) != 2 || len(ended) != 2 {
		t.Errorf("the subscriber saw %d children spawned and %d ended, before the lead's end; want 2 and 2", len(spawned), len(ended))
	}
	for id, ok := range ended {
		if !ok {
			t.Errorf("child %s: its end came without its spawn, or it did not complete", id)
		}
	}
}

func TestIntegrationCancelReachesEveryChild(t *testing.T) {
	c := cluster(t)
	root := t.TempDir()
	startWorker(t, c, "cancel", root, blockingModel())
	m := remoteManager(t, c, "cancel", root)
	sub := m.Subscribe()
	defer sub.Close()
	a, err := m.Spawn(context.Background(), manager.SpawnRequest{Type: "lead", Task: "wait for them"})
	if err != nil {
		t.Fatal(err)
	}
	var children []string
	for e := range sub.C() {
		if e.Kind == manager.EventState && e.State == manager.Running && e.ParentID == a.ID() {
			children = append(children, e.AgentID)
		}
		if len(children) == 2 {
			break
		}
	}
	a.Cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := a.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != manager.Cancelled {
		t.Fatalf("the lead ended %s (%s), want cancelled", r.State, r.Error)
	}
	for _, id := range children {
		d, err := c.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			t.Fatal(err)
		}
		if st := d.WorkflowExecutionInfo.Status; st == enums.WORKFLOW_EXECUTION_STATUS_RUNNING {
			t.Errorf("child %s is still running after its lead ended", id)
		}
	}
}
