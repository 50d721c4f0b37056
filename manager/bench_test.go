package manager_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

// benchManager builds a manager over a registry with one no-op tool and a
// type that may call it.
func benchManager(b *testing.B, model llms.Model, concurrent, queue int) *manager.Manager {
	b.Helper()
	reg := agenttypes.NewRegistry()
	_ = reg.RegisterTool(&agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "noop", Description: "does nothing", ReadOnly: true},
		Func:     func(context.Context, json.RawMessage) (string, error) { return "ok", nil },
	})
	_ = reg.RegisterType(agenttypes.Type{Name: "bench", Description: "benchmarks", Prompt: "system", Tools: []string{"noop"}})
	mgr, err := manager.New(manager.Config{
		Registry:      reg,
		Models:        manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil }),
		DefaultModel:  "scripted",
		MaxConcurrent: concurrent,
		MaxQueue:      queue,
		Logger:        slog.New(slog.DiscardHandler),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = mgr.Close(context.Background()) })
	return mgr
}

// threeTurns asks for two tool calls on each of three turns, then answers.
func threeTurns() *scripted.Model {
	two := scripted.Step{Calls: []scripted.Call{{Name: "noop"}, {Name: "noop"}}}
	return scripted.New(two, two, two, scripted.Step{Text: "done"}).WithoutRecording()
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

// BenchmarkSpawn measures how long Spawn takes to return, at p50 and p99.
func BenchmarkSpawn(b *testing.B) {
	mgr := benchManager(b, scripted.New(scripted.Step{Text: "done"}).WithoutRecording(), 64, 1_000_000)
	lat := make([]time.Duration, 0, b.N)
	agents := make([]*manager.Agent, 0, b.N)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		a, err := mgr.Spawn(ctx, manager.SpawnRequest{Type: "bench", Task: "t"})
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		agents = append(agents, a)
	}
	b.StopTimer()
	for _, a := range agents {
		<-a.Done()
	}
	b.ReportMetric(float64(percentile(lat, 0.50).Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(percentile(lat, 0.99).Nanoseconds()), "p99-ns")
}

// clockModel records when each conversation calls it, so the time between
// two calls of one agent is the manager's cost of one step (the model and
// the tools take no time).
type clockModel struct {
	*scripted.Model
	mu    sync.Mutex
	stamp map[*llms.MessageContent]time.Time
	steps []time.Duration
}

func (c *clockModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	now := time.Now()
	key := &msgs[0] // one conversation keeps its first message in place
	c.mu.Lock()
	if prev, ok := c.stamp[key]; ok {
		c.steps = append(c.steps, now.Sub(prev))
	}
	c.mu.Unlock()
	resp, err := c.Model.GenerateContent(ctx, msgs, opts...)
	c.mu.Lock()
	c.stamp[key] = time.Now()
	c.mu.Unlock()
	return resp, err
}

// BenchmarkStepOverhead runs agents one at a time and reports the
// manager's own time per model↔tool step (two no-op tool calls).
func BenchmarkStepOverhead(b *testing.B) {
	model := &clockModel{Model: threeTurns(), stamp: map[*llms.MessageContent]time.Time{}}
	mgr := benchManager(b, model, 1, 1_000_000)
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		a, err := mgr.Spawn(ctx, manager.SpawnRequest{Type: "bench", Task: "t"})
		if err != nil {
			b.Fatal(err)
		}
		<-a.Done()
	}
	b.StopTimer()
	b.ReportMetric(float64(percentile(model.steps, 0.50).Nanoseconds()), "step-p50-ns")
	b.ReportMetric(float64(percentile(model.steps, 0.99).Nanoseconds()), "step-p99-ns")
}

// BenchmarkWorkload runs 10,000 agents × 3 turns × 2 tool calls with a
// zero-latency model at concurrency 1,000.
func BenchmarkWorkload(b *testing.B) {
	const agents, concurrency, steps = 10_000, 1_000, 3
	model := threeTurns()
	ctx := context.Background()
	b.ReportAllocs()
	for range b.N {
		mgr := benchManager(b, model, concurrency, agents)
		handles := make([]*manager.Agent, agents)
		start := time.Now()
		for i := range handles {
			a, err := mgr.Spawn(ctx, manager.SpawnRequest{Type: "bench", Task: "t"})
			if err != nil {
				b.Fatal(err)
			}
			handles[i] = a
		}
		for _, a := range handles {
			<-a.Done()
		}
		elapsed := time.Since(start)
		st := mgr.Stats()
		if st.Completed != agents || st.ToolCalls != agents*steps*2 {
			b.Fatalf("stats %+v", st)
		}
		b.ReportMetric(float64(elapsed.Milliseconds()), "wall-ms")
		b.ReportMetric(float64(elapsed.Nanoseconds())/float64(agents*steps), "wall-ns/step")
	}
}

// spawnRunning spawns n agents and returns once all of them are running.
func spawnRunning(b *testing.B, mgr *manager.Manager, n int) []*manager.Agent {
	b.Helper()
	handles := make([]*manager.Agent, n)
	for i := range handles {
		a, err := mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "bench", Task: "t"})
		if err != nil {
			b.Fatal(err)
		}
		handles[i] = a
	}
	for mgr.Stats().Running < n {
		time.Sleep(time.Millisecond)
	}
	return handles
}

// BenchmarkMemoryPerAgent holds 10,000 agents running (each blocked in a
// model call) and reports the heap and stack they take, conversation aside.
func BenchmarkMemoryPerAgent(b *testing.B) {
	const agents = 10_000
	for range b.N {
		model := scripted.New(scripted.Step{Block: true}).WithoutRecording()
		mgr := benchManager(b, model, agents, agents)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		handles := spawnRunning(b, mgr, agents)
		runtime.GC()
		runtime.ReadMemStats(&after)
		used := (after.HeapInuse + after.StackInuse) - (before.HeapInuse + before.StackInuse)
		b.ReportMetric(float64(used)/agents/1024, "KiB/agent")
		mgr.CancelAll()
		for _, a := range handles {
			<-a.Done()
		}
	}
}

// BenchmarkCancelAll cancels 10,000 running agents and waits until every
// one is terminal and its goroutine gone.
func BenchmarkCancelAll(b *testing.B) {
	const agents = 10_000
	for range b.N {
		b.StopTimer()
		baseline := runtime.NumGoroutine()
		model := scripted.New(scripted.Step{Block: true}).WithoutRecording()
		mgr := benchManager(b, model, agents, agents)
		handles := spawnRunning(b, mgr, agents)
		b.StartTimer()
		start := time.Now()
		mgr.CancelAll()
		for _, a := range handles {
			<-a.Done()
		}
		elapsed := time.Since(start)
		b.StopTimer()
		b.ReportMetric(float64(elapsed.Microseconds())/1000, "cancel-ms")
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > baseline && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > baseline {
			b.Fatalf("%d goroutines left behind", n-baseline)
		}
		if st := mgr.Stats(); st.Cancelled != agents {
			b.Fatalf("%+v", st)
		}
	}
}

// BenchmarkCancelSubtree cancels the root of a running tree of 1,000
// agents (1 root, 9 children, 990 grandchildren) and waits until every
// one has ended: how long cancellation takes to reach a whole subtree.
func BenchmarkCancelSubtree(b *testing.B) {
	reg := agenttypes.NewRegistry()
	_ = reg.RegisterType(agenttypes.Type{Name: "bench", Description: "benchmarks", Prompt: "system"})
	for range b.N {
		b.StopTimer()
		model := scripted.New(scripted.Step{Block: true}).WithoutRecording()
		mgr, err := manager.New(manager.Config{
			Registry:      reg,
			Models:        manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil }),
			DefaultModel:  "scripted",
			MaxConcurrent: 1000,
			MaxDepth:      2,
			MaxChildren:   110,
			MaxTreeAgents: 1000,
			Logger:        slog.New(slog.DiscardHandler),
		})
		if err != nil {
			b.Fatal(err)
		}
		spawn := func(parent string) *manager.Agent {
			a, err := mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "bench", Task: "t", ParentID: parent})
			if err != nil {
				b.Fatal(err)
			}
			return a
		}
		root := spawn("")
		tree := []*manager.Agent{root}
		for range 9 {
			c := spawn(root.ID())
			tree = append(tree, c)
			for range 110 {
				tree = append(tree, spawn(c.ID()))
			}
		}
		for mgr.Stats().Running < len(tree) {
			time.Sleep(100 * time.Microsecond)
		}
		b.StartTimer()
		start := time.Now()
		root.Cancel()
		for _, a := range tree {
			<-a.Done()
		}
		elapsed := time.Since(start)
		b.StopTimer()
		b.ReportMetric(float64(elapsed.Microseconds())/1000, "subtree-cancel-ms")
		if st := mgr.Stats(); st.Cancelled != len(tree) {
			b.Fatalf("%+v", st)
		}
		_ = mgr.Close(context.Background())
	}
}

// BenchmarkMemoryPendingBehindRunning queues 10,000 agents behind 1,000
// running ones (each blocked in a model call) and reports what a running
// and a pending agent take, conversation aside.
func BenchmarkMemoryPendingBehindRunning(b *testing.B) {
	const running, pending = 1_000, 10_000
	for range b.N {
		model := scripted.New(scripted.Step{Block: true}).WithoutRecording()
		mgr := benchManager(b, model, running, pending)
		var base, withRunning, withPending runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&base)
		handles := spawnRunning(b, mgr, running)
		runtime.GC()
		runtime.ReadMemStats(&withRunning)
		for range pending {
			a, err := mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "bench", Task: "t"})
			if err != nil {
				b.Fatal(err)
			}
			handles = append(handles, a)
		}
		runtime.GC()
		runtime.ReadMemStats(&withPending)
		inuse := func(m *runtime.MemStats) float64 { return float64(m.HeapInuse + m.StackInuse) }
		b.ReportMetric((inuse(&withRunning)-inuse(&base))/running/1024, "KiB/running")
		b.ReportMetric((inuse(&withPending)-inuse(&withRunning))/pending/1024, "KiB/pending")
		mgr.CancelAll()
		for _, a := range handles {
			<-a.Done()
		}
	}
}

// BenchmarkLoneAgentBudgets runs lone agents (no parent, no children),
// one at a time, through loneSteps steps of two no-op tool calls each,
// alternately with no budget ("own": nothing to share) and with every
// budget a tree shares (tokens, tool calls, turns, time), and reports each
// one's time per step, their ratio (shared/own), and the allocations the
// budgets add to a step. A lone agent's budgets go through the same tree
// bookkeeping as a child's (its tree's lock, the walk up its chain, the
// hold on its tokens), and no step runs without it, so the difference
// bounds what that bookkeeping, and checking the budgets at all, cost it.
// Each pair runs back to back, in turn in either order, so both see the
// same machine. The allocations are counted apart, at two lengths of run,
// so that what a budget costs once an agent (its time budget's timer) is
// told from what it costs a step.
func BenchmarkLoneAgentBudgets(b *testing.B) {
	const loneSteps = 20
	budgets := [2]agenttypes.Budget{{}, {MaxTokens: 1_000_000, MaxToolCalls: 1_000, MaxTurns: 100, MaxTime: time.Hour}}
	managers := func(steps int) (mgrs [2]*manager.Manager) {
		two := scripted.Step{Calls: []scripted.Call{{Name: "noop"}, {Name: "noop"}}}
		script := make([]scripted.Step, 0, steps+1)
		for range steps {
			script = append(script, two)
		}
		script = append(script, scripted.Step{Text: "done"})
		for i := range mgrs {
			mgrs[i] = benchManager(b, scripted.New(script...).WithoutRecording(), 1, 1_000_000)
		}
		return mgrs
	}
	ctx := context.Background()
	run := func(mgr *manager.Manager, i int) {
		a, err := mgr.Spawn(ctx, manager.SpawnRequest{Type: "bench", Task: "t", Budget: budgets[i]})
		if err != nil {
			b.Fatal(err)
		}
		<-a.Done()
	}
	mgrs := managers(loneSteps)
	var took [2]time.Duration
	b.ResetTimer()
	for n := range b.N {
		for k := range 2 {
			i := k ^ n&1
			start := time.Now()
			run(mgrs[i], i)
			took[i] += time.Since(start)
		}
	}
	b.StopTimer()
	perStep := float64(b.N * (loneSteps + 1))
	b.ReportMetric(float64(took[0].Nanoseconds())/perStep, "own-ns/step")
	b.ReportMetric(float64(took[1].Nanoseconds())/perStep, "shared-ns/step")
	b.ReportMetric(float64(took[1])/float64(took[0]), "shared/own")
	// Allocations, counted apart (reading them stops the world): the extra
	// of the budgets at loneSteps and at twice as many steps.
	const counted = 200
	extra := func(mgrs [2]*manager.Manager) float64 {
		var allocs [2]uint64
		var before, after runtime.MemStats
		for i := range 2 {
			run(mgrs[i], i) // warm
			runtime.ReadMemStats(&before)
			for range counted {
				run(mgrs[i], i)
			}
			runtime.ReadMemStats(&after)
			allocs[i] = after.Mallocs - before.Mallocs
		}
		return (float64(allocs[1]) - float64(allocs[0])) / counted
	}
	short, long := extra(mgrs), extra(managers(2*loneSteps))
	// To a hundredth: a stray allocation of the runtime's in 200 agents
	// is no allocation of a step.
	perStepExtra := math.Round((long-short)/loneSteps*100) / 100
	if perStepExtra == 0 {
		perStepExtra = 0 // not -0
	}
	b.ReportMetric(perStepExtra, "extra-allocs/step")
	b.ReportMetric(math.Round(short-(long-short)), "extra-allocs/agent")
}
