//go:build integration

package temporal

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"google.golang.org/protobuf/proto"

	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
	"github.com/troupe-dev/troupe/manager/temporal/internal/devserver"
)

// BenchmarkIntegrationAgents runs agents of one type (two model calls and
// a tool call each, the model answering at once) in process and on a
// Temporal dev server with 1, 2 and 3 worker processes, side by side:
//   - agents/s with 32 running at once (…/parallel);
//   - the time a step takes, for one agent running alone (…/alone), a
//     step being a model call and what follows it;
//   - on Temporal, the workflow history events a step adds (events/step).
func BenchmarkIntegrationAgents(b *testing.B) {
	srv := devserver.Start(b)
	c, err := client.Dial(client.Options{HostPort: srv.HostPort(), Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	root := b.TempDir()
	b.Run("in-process", func(b *testing.B) {
		model := crashModel(noLog, 0, false)
		benchAgents(b, benchManager(b, nil, func(context.Context, string) (llms.Model, error) { return model, nil }), nil, 100)
	})
	for _, n := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("temporal-%d-workers", n), func(b *testing.B) {
			queue := fmt.Sprintf("bench-%d-%d", n, b.N)
			for range n {
				startWorkerProcess(b, srv.HostPort(), queue, root, noLog, 0, "")
			}
			backend, err := New(Config{Client: c, TaskQueue: queue, Root: root})
			if err != nil {
				b.Fatal(err)
			}
			benchAgents(b, benchManager(b, backend, nil), c, 1)
		})
	}
}

func benchManager(b *testing.B, backend manager.Backend, models manager.ModelResolverFunc) *manager.Manager {
	reg, err := crashRegistry()
	if err != nil {
		b.Fatal(err)
	}
	cfg := manager.Config{Logger: slog.New(slog.DiscardHandler), Registry: reg, DefaultModel: "scripted", MaxConcurrent: 64, Backend: backend}
	if models != nil {
		cfg.Models = models
	}
	m, err := manager.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = m.Close(context.Background()) })
	return m
}

// benchAgents runs scale agents an iteration (in process, 20 agents
// would take too little time to measure).
func benchAgents(b *testing.B, m *manager.Manager, c client.Client, scale int) {
	ctx := context.Background()
	runOne := func(i int) manager.Result {
		a, err := m.Spawn(ctx, manager.SpawnRequest{Type: "helper", Task: fmt.Sprint("say ", i)})
		if err != nil {
			b.Fatal(err)
		}
		r, err := a.Wait(ctx)
		if err != nil || r.State != manager.Completed {
			b.Fatalf("agent %d: %s %v %s", i, r.State, err, r.Error)
		}
		return r
	}
	b.Run("parallel", func(b *testing.B) {
		sem := make(chan struct{}, 32)
		var wg sync.WaitGroup
		start := time.Now()
		for i := range b.N * scale {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				runOne(i)
			}()
		}
		wg.Wait()
		b.ReportMetric(float64(b.N*scale)/time.Since(start).Seconds(), "agents/s")
	})
	b.Run("alone", func(b *testing.B) {
		steps := 0
		var last manager.Result
		start := time.Now()
		for i := range b.N * scale {
			last = runOne(i)
			steps += last.Turns
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/float64(steps), "µs/step")
		b.ReportMetric(0, "ns/op")
		if c != nil {
			events, size := historyEvents(b, c, last.ID)
			b.ReportMetric(float64(events)/float64(last.Turns), "events/step")
			b.ReportMetric(float64(size)/float64(last.Turns), "history-B/step")
		}
	})
}

// historyEvents counts a workflow's history events and their encoded
// bytes.
func historyEvents(b *testing.B, c client.Client, id string) (n, size int) {
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			b.Fatal(err)
		}
		n++
		size += proto.Size(e)
	}
	return n, size
}

// BenchmarkIntegrationCancel measures how long a cancel from the client
// takes to reach every child wherever it runs: from Cancel to the model
// calls under way in two children (in a worker) returning because their
// contexts ended.
func BenchmarkIntegrationCancel(b *testing.B) {
	srv := devserver.Start(b)
	c, err := client.Dial(client.Options{HostPort: srv.HostPort(), Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	root := b.TempDir()
	started, stopped := make(chan struct{}, 2), make(chan struct{}, 2)
	step := scripted.Step{Func: func(ctx context.Context, msgs []llms.MessageContent) scripted.Step {
		if scripted.Text(msgs[0]) == "You lead." {
			return scripted.Step{Calls: []scripted.Call{{Name: "delegate", Args: scripted.JSON(map[string]any{
				"tasks": []map[string]any{{"label": "a", "type": "helper", "prompt": "wait"}, {"label": "b", "type": "helper", "prompt": "wait"}}})}}}
		}
		started <- struct{}{}
		<-ctx.Done()
		stopped <- struct{}{}
		return scripted.Step{Err: ctx.Err()}
	}}
	model := scripted.New(step, step)
	wm := benchManager(b, nil, func(context.Context, string) (llms.Model, error) { return model, nil })
	w, err := NewWorker(c, WorkerConfig{Manager: wm, TaskQueue: "cancel", Root: root})
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	backend, err := New(Config{Client: c, TaskQueue: "cancel", Root: root})
	if err != nil {
		b.Fatal(err)
	}
	m := benchManager(b, backend, nil)
	var total time.Duration
	for range b.N {
		a, err := m.Spawn(context.Background(), manager.SpawnRequest{Type: "lead", Task: "wait for them"})
		if err != nil {
			b.Fatal(err)
		}
		<-started
		<-started
		start := time.Now()
		a.Cancel()
		<-stopped
		<-stopped
		total += time.Since(start)
		if _, err := a.Wait(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/cancel")
	b.ReportMetric(0, "ns/op")
}
