package manager_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

func waitState(t *testing.T, a *manager.Agent, want manager.State) {
	t.Helper()
	require.Eventually(t, func() bool { return a.Info().State == want }, 5*time.Second, time.Millisecond, "agent %s never reached %s", a.ID(), want)
}

// R1: a held agent cancelled out of order lets the group go past its
// concurrency: its end releases the next held agent although no running
// agent ended.
func TestCancellingAHeldAgentKeepsGroupConcurrency(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	running, most := 0, 0
	step := scripted.Step{Func: func(ctx context.Context, _ []llms.MessageContent) scripted.Step {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		select {
		case <-release:
		case <-ctx.Done():
		}
		mu.Lock()
		running--
		mu.Unlock()
		return scripted.Step{Text: "done"}
	}}
	// One slot, which job 0 takes: an agent the group lets go too early
	// then waits in the manager's queue, where it is seen at once,
	// rather than starting on a goroutine of its own some time later.
	tf := newTreeFixture(t, map[string][]scripted.Step{"job ...": {step}}, func(c *manager.Config) { c.MaxConcurrent = 1 })
	g, err := tf.mgr.SpawnGroup(context.Background(), manager.GroupRequest{Concurrency: 1, Tasks: []agenttypes.ChildTask{
		{Type: "worker", Prompt: "job 0"}, {Type: "worker", Prompt: "job 1"}, {Type: "worker", Prompt: "job 2"},
	}})
	require.NoError(t, err)
	agents := g.Agents()
	// OnComplete runs after the group was told of the agent's end, and so
	// after any held agent that end let go was queued.
	job2Ended := make(chan struct{})
	tf.mgr.OnComplete(func(info manager.Info) {
		if info.ID == agents[2].ID() {
			close(job2Ended)
		}
	})
	waitState(t, agents[0], manager.Running)
	agents[2].Cancel() // still held
	<-job2Ended
	queued := tf.mgr.Slots().Queue
	st := agents[1].Info().State
	close(release)
	<-g.Done()
	assert.Zero(t, queued, "job 2's end let job 1 go while job 0 runs: the group's concurrency is 1")
	assert.Equal(t, manager.Pending, st, "job 1 must wait for job 0")
	assert.Equal(t, 1, most, "at most one of the group ran at once")
}

// R2: a custom loop's parent waiting on its children (through CallTool of
// delegate, or Tree().Delegate) does not lend its slot, so with one slot
// the child can never start.
func TestCustomLoopParentLendsItsSlotWhileDelegating(t *testing.T) {
	for name, viaTree := range map[string]bool{"CallTool": false, "Tree": true} {
		t.Run(name, func(t *testing.T) {
			tf := newTreeFixture(t, map[string][]scripted.Step{"child job": {{Text: "child done"}}},
				func(c *manager.Config) { c.MaxConcurrent = 1 })
			loop := agenttypes.LoopFunc(func(ctx context.Context, s agenttypes.Session, task string) (string, error) {
				req := agenttypes.DelegateRequest{Tasks: []agenttypes.ChildTask{{Label: "c", Type: "worker", Prompt: "child job"}}}
				if viaTree {
					resp, err := s.Tree().Delegate(ctx, req)
					if err != nil {
						return "", err
					}
					return resp.Results[0].Report, nil
				}
				return s.CallTool(ctx, agenttypes.ToolCall{ID: "1", Name: "delegate", Args: json.RawMessage(scripted.JSON(req))})
			})
			require.NoError(t, tf.reg.RegisterType(agenttypes.Type{Name: "customlead", Description: "x", Tools: []string{"delegate"}, Loop: loop}))
			a, err := tf.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "customlead", Task: "lead", Budget: agenttypes.Budget{MaxTime: 2 * time.Second}})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			res, err := a.Wait(ctx)
			require.NoError(t, err)
			assert.Equal(t, manager.Completed, res.State, "%s: %s", res.Reason, res.Error)
		})
	}
}

// R3: a loop that returns while one of its Generate calls is in flight:
// the run's end and the call race on the loop's conversation (-race), and
// the call is charged after the result was recorded.
func TestCustomLoopReturningWhileGenerateRuns(t *testing.T) {
	// The model call is entered before the loop returns and answers only
	// once the loop has returned, so the call is in flight across the
	// loop's return whatever the scheduler does.
	entered, returned := make(chan struct{}), make(chan struct{})
	model := scripted.New(scripted.Step{Func: func(context.Context, []llms.MessageContent) scripted.Step {
		close(entered)
		<-returned
		return scripted.Step{Text: "late", InputTokens: 100, OutputTokens: 100}
	}})
	var wg sync.WaitGroup
	var lateErr error
	loop := agenttypes.LoopFunc(func(ctx context.Context, s agenttypes.Session, task string) (string, error) {
		defer close(returned)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, lateErr = s.Generate(context.Background(), agenttypes.GenerateRequest{Messages: []agenttypes.Message{{Role: agenttypes.RoleUser, Text: task}}})
		}()
		<-entered
		return "early answer", nil
	})
	f := customFixture(t, model, loop, nil)
	res := f.run(t, manager.SpawnRequest{Type: "custom", Task: "t"})
	wg.Wait()
	require.NoError(t, lateErr, "the call was under way when the loop returned, so it is answered")
	info, err := f.mgr.Get(res.ID)
	require.NoError(t, err)
	assert.Equal(t, 100, res.Usage.InputTokens, "the call in flight is charged before the result is recorded")
	assert.Equal(t, res.Usage, info.Usage, "nothing is charged to an agent after it ended")
}

// R4: the parent's model answering a child's question is not held to the
// parent's token budget: the call asks for 1024 output tokens whatever
// the parent has left.
func TestAskParentCallIsCappedToTheParentsBudget(t *testing.T) {
	ask := scripted.Step{Calls: []scripted.Call{{Name: "ask_parent", Args: `{"question":"which one?"}`}}, InputTokens: 10, OutputTokens: 5}
	script := map[string][]scripted.Step{
		"lead": {
			{Text: "x", Calls: []scripted.Call{{Name: "echo", Args: `{"text":"x"}`}}, InputTokens: 3000, OutputTokens: 100},
			delegateCall(agenttypes.DelegateRequest{Tasks: []agenttypes.ChildTask{{Label: "c", Type: "worker", Prompt: "asker"}}}),
			{Text: "done"},
		},
		"asker":                       {ask, {Text: "ok"}},
		"Your conversation so far...": {{Text: "this one", InputTokens: 50, OutputTokens: 900}},
	}
	tf := newTreeFixture(t, script, nil)
	res := tf.run(t, manager.SpawnRequest{Type: "lead", Task: "lead", Budget: agenttypes.Budget{MaxTokens: 4000}})
	asked := 0
	for _, r := range tf.model.Requests() {
		if len(r.Messages) > 1 && strings.HasPrefix(scripted.Text(r.Messages[1]), "Your conversation so") {
			asked++
			assert.LessOrEqual(t, r.MaxTokens, 700, "the parent had at most 700 tokens left")
		}
	}
	require.Equal(t, 1, asked, "the child asked its parent's model")
	_ = res
}

// R5: two background delegations of one parent at once both pass the
// MaxBackgroundGroups check.
func TestBackgroundGroupLimitHoldsUnderConcurrency(t *testing.T) {
	// A request past the limit's check resolves its model, and waits
	// there until the other request is past the check too, or was
	// refused: so both are checked before either group exists.
	var arrived atomic.Int32
	bothPast, refused := make(chan struct{}), make(chan struct{})
	var refuse sync.Once
	model := byTask(map[string][]scripted.Step{"lead": {{Block: true}}, "bg...": {{Block: true}}})
	tf := newTreeFixture(t, nil, func(c *manager.Config) {
		c.MaxBackgroundGroups = 1
		c.Models = manager.ModelResolverFunc(func(_ context.Context, name string) (llms.Model, error) {
			if name != "scripted" {
				if arrived.Add(1) == 2 {
					close(bothPast)
				}
				select {
				case <-bothPast:
				case <-refused:
				}
			}
			return model, nil
		})
	})
	lead, err := tf.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "lead", Task: "lead"})
	require.NoError(t, err)
	var wg sync.WaitGroup
	var ok atomic.Int32
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := tf.mgr.SpawnGroup(context.Background(), manager.GroupRequest{ParentID: lead.ID(), Background: true,
				Tasks: []agenttypes.ChildTask{{Type: "worker", Prompt: "bg", Model: []string{"m1", "m2"}[i]}}})
			if err == nil {
				ok.Add(1)
				return
			}
			refuse.Do(func() { close(refused) })
		}()
	}
	wg.Wait()
	lead.Cancel()
	assert.Equal(t, int32(1), ok.Load(), "MaxBackgroundGroups is 1")
}

// R6: a group whose children are partly released when the manager closes
// still reports Done.
func TestGroupDoneClosesOnClose(t *testing.T) {
	tf := newTreeFixture(t, map[string][]scripted.Step{"job ...": {{Block: true}}}, nil)
	g, err := tf.mgr.SpawnGroup(context.Background(), manager.GroupRequest{Concurrency: 1, Tasks: []agenttypes.ChildTask{
		{Type: "worker", Prompt: "job 0"}, {Type: "worker", Prompt: "job 1"}, {Type: "worker", Prompt: "job 2"},
	}})
	require.NoError(t, err)
	waitState(t, g.Agents()[0], manager.Running)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, tf.mgr.Close(ctx))
	select {
	case <-g.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("group never done")
	}
	s := tf.mgr.Stats()
	assert.Zero(t, s.Pending+s.Running)
	assert.Equal(t, 3, s.Cancelled)
}

// R7: a child of a parent that is still pending (queued) is refused, or
// gets less time, because the parent's time budget is counted from its
// creation, not from its start.
func TestChildOfAPendingParentGetsItsTimeBudget(t *testing.T) {
	// The manager's clock, moved on by hand past the parent's time budget.
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	tf := newTreeFixture(t, map[string][]scripted.Step{"block": {{Block: true}}, "lead": {{Block: true}}}, func(c *manager.Config) {
		c.MaxConcurrent = 1
		manager.SetClock(c, clock)
	})
	blocker, err := tf.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "block"})
	require.NoError(t, err)
	lead, err := tf.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "lead", Task: "lead", Budget: agenttypes.Budget{MaxTime: 100 * time.Millisecond}})
	require.NoError(t, err)
	mu.Lock()
	now = now.Add(150 * time.Millisecond)
	mu.Unlock()
	require.Equal(t, manager.Pending, lead.Info().State)
	_, err = tf.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "child", ParentID: lead.ID()})
	blocker.Cancel()
	lead.Cancel()
	assert.NoError(t, err, "the pending parent has spent none of its time")
}

// R8: counters do not drift when groups are cancelled at random moments,
// held agents are cancelled, and group spawns fail halfway.
func TestCountersSettleAfterCancelledAndRefusedGroups(t *testing.T) {
	tf := newTreeFixture(t, map[string][]scripted.Step{"lead": {{Block: true}}, "job ...": {{Delay: time.Millisecond, Text: "ok"}}},
		func(c *manager.Config) { c.MaxTreeAgents = 5; c.MaxChildren = 10_000; c.MaxConcurrent = 3 })
	lead, err := tf.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "lead", Task: "lead"})
	require.NoError(t, err)
	defer lead.Cancel()
	for i := range 200 {
		tasks := []agenttypes.ChildTask{{Type: "worker", Prompt: "job a"}, {Type: "worker", Prompt: "job b"}, {Type: "worker", Prompt: "job c"}}
		if i%5 == 0 {
			tasks[2].Type = "nosuchtype"
		}
		g, err := tf.mgr.SpawnGroup(context.Background(), manager.GroupRequest{ParentID: lead.ID(), Concurrency: 1 + i%3, Tasks: tasks})
		if i%5 == 0 {
			require.Error(t, err)
			continue
		}
		require.NoError(t, err, "round %d", i)
		switch i % 4 {
		case 0:
			g.Cancel()
		case 1:
			g.Agents()[2].Cancel()
		case 2:
			// Cancelled at a point each round names: as soon as the first
			// agent has left pending, or once it has ended.
			first := g.Agents()[0]
			if i%3 == 0 {
				require.Eventually(t, func() bool { return first.Info().State != manager.Pending }, 5*time.Second, time.Millisecond, "round %d: the first agent never started", i)
			} else {
				<-first.Done()
			}
			g.Cancel()
		}
		select {
		case <-g.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: group never done", i)
		}
	}
	require.Eventually(t, func() bool {
		s := tf.mgr.Stats()
		return s.Pending == 0 && s.Running == 1 && tf.mgr.Slots().Running == 1
	}, 5*time.Second, time.Millisecond, "%+v %+v", tf.mgr.Stats(), tf.mgr.Slots())
}
