package manager_test

import (
	"context"
	"encoding/json"
	"runtime"
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

// inFlight counts agents inside a model call at once.
type inFlight struct{ cur, max atomic.Int64 }

func (f *inFlight) enter() {
	n := f.cur.Add(1)
	for {
		m := f.max.Load()
		if n <= m || f.max.CompareAndSwap(m, n) {
			return
		}
	}
}
func (f *inFlight) leave() { f.cur.Add(-1) }

// counted wraps a step so the model call it plays is counted.
func counted(f *inFlight, s scripted.Step, hold func(ctx context.Context)) scripted.Step {
	return scripted.Step{Func: func(ctx context.Context, _ []llms.MessageContent) scripted.Step {
		f.enter()
		defer f.leave()
		if hold != nil {
			hold(ctx)
		}
		return s
	}}
}

func toolFunc(name string, fn func(ctx context.Context, args json.RawMessage) (string, error)) *agenttypes.ToolFunc {
	return &agenttypes.ToolFunc{ToolSpec: agenttypes.ToolSpec{Name: name, Description: name}, Func: fn}
}

// D1: a wait whose own context (derived from the tool's, e.g. a collect
// with a timeout) ends while the slots are all taken returns without a slot,
// and the agent goes on calling its model: MaxConcurrent is exceeded.
func TestAWaitThatTimesOutDoesNotResumeWithoutASlot(t *testing.T) {
	var mgr *manager.Manager
	var fl inFlight
	release := make(chan struct{})
	model := byTask(map[string][]scripted.Step{
		"parent": {
			{Calls: []scripted.Call{{Name: "waitbrief"}}},
			counted(&fl, scripted.Step{Text: "parent done"}, func(context.Context) { time.Sleep(100 * time.Millisecond) }),
		},
		"child": {counted(&fl, scripted.Step{Text: "child done"}, func(context.Context) { <-release })},
	})
	waitBrief := toolFunc("waitbrief", func(ctx context.Context, _ json.RawMessage) (string, error) {
		c, err := mgr.Spawn(ctx, manager.SpawnRequest{Type: "worker", Task: "child", ParentID: agenttypes.EnvFrom(ctx).AgentID})
		if err != nil {
			return "", err
		}
		wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		if _, err := c.Wait(wctx); err != nil {
			return "still running", nil
		}
		return "done", nil
	})
	f := newFixture(t, model, func(c *manager.Config) { c.MaxConcurrent = 1 }, waitBrief)
	mgr = f.mgr
	p, err := mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "parent"})
	require.NoError(t, err)
	time.AfterFunc(300*time.Millisecond, func() { close(release) })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := p.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.LessOrEqual(t, fl.max.Load(), int64(1), "with MaxConcurrent=1, agents inside a model call at once")
}

// D2: two parallel tool calls wait on children. The first wait's child
// hands its slot to the parent; the second wait then starts before the
// first reclaims (lent becomes 2) and lendSlot gives nothing: the parent
// holds the only slot while it waits on a queued child — deadlock.
func TestParallelWaitsOfOneAgentDoNotDeadlock(t *testing.T) {
	hung := 0
	for i := range 50 {
		if !parallelWaitsOnce(t, i) {
			hung++
		}
	}
	assert.Zero(t, hung, "runs of 50 where the parent never got its second child run")
}

func parallelWaitsOnce(t *testing.T, _ int) bool {
	var mgr *manager.Manager
	c1ch := make(chan *manager.Agent, 1)
	release := make(chan struct{})
	model := byTask(map[string][]scripted.Step{
		"parent": {{Calls: []scripted.Call{{Name: "a"}, {Name: "b"}}}, {Text: "parent done"}},
		"c1": {{Func: func(context.Context, []llms.MessageContent) scripted.Step {
			<-release
			return scripted.Step{Text: "c1"}
		}}},
		"c2": {{Text: "c2"}},
	})
	spawn := func(ctx context.Context, task string) *manager.Agent {
		a, err := mgr.Spawn(ctx, manager.SpawnRequest{Type: "worker", Task: task, ParentID: agenttypes.EnvFrom(ctx).AgentID})
		if err != nil {
			panic(err)
		}
		return a
	}
	a := toolFunc("a", func(ctx context.Context, _ json.RawMessage) (string, error) {
		c1 := spawn(ctx, "c1")
		c1ch <- c1
		_, err := c1.Wait(ctx)
		return "a", err
	})
	b := toolFunc("b", func(ctx context.Context, _ json.RawMessage) (string, error) {
		c1 := <-c1ch
		c2 := spawn(ctx, "c2") // queued: c1 holds the slot
		close(release)
		// Wait until c1 has ended and handed its slot to the parent, whose
		// first wait has not yet been reclaimed (lent is still 1).
		for {
			s := mgr.Slots()
			if c1.Info().State.Terminal() && s.Running == 1 && s.Lent == 1 {
				break
			}
			if s.Lent == 0 && c1.Info().State.Terminal() {
				break // too late this time
			}
			runtime.Gosched()
		}
		_, err := c2.Wait(ctx)
		return "b", err
	})
	f := newFixture(t, model, func(c *manager.Config) { c.MaxConcurrent = 1; c.TranscriptDir = t.TempDir() }, a, b)
	mgr = f.mgr
	p, err := mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "parent"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = p.Wait(ctx)
	if err != nil {
		s := mgr.Slots()
		t.Logf("hung: %+v", s)
		p.Cancel()
		return false
	}
	return true
}

// D3: a tool that waits in the background (a goroutine keeping the tool's
// context values, as a background delegate would) lends the slot of an
// agent that keeps calling its model, and when the wait ends after the
// agent has ended, the ended agent takes a slot it never gives back.
func TestAWaitOutlivingItsToolCallLeaksNoSlot(t *testing.T) {
	var mgr *manager.Manager
	var fl inFlight
	parentCh := make(chan *manager.Agent, 1)
	var bg sync.WaitGroup
	model := byTask(map[string][]scripted.Step{
		"parent": {
			{Calls: []scripted.Call{{Name: "bg"}}},
			counted(&fl, scripted.Step{Text: "parent done"}, func(context.Context) { time.Sleep(100 * time.Millisecond) }),
		},
		"child": {counted(&fl, scripted.Step{Text: "child done"}, func(context.Context) {
			p := <-parentCh
			select { // the child ends after its parent (or, if the parent waits for its slot, a little later)
			case <-p.Done():
			case <-time.After(500 * time.Millisecond):
			}
		})},
		"later": {{Text: "later done"}},
	})
	bgTool := toolFunc("bg", func(ctx context.Context, _ json.RawMessage) (string, error) {
		c, err := mgr.Spawn(ctx, manager.SpawnRequest{Type: "worker", Task: "child"}) // top-level, outlives the parent
		if err != nil {
			return "", err
		}
		bg.Add(1)
		go func() {
			defer bg.Done()
			_, _ = c.Wait(context.WithoutCancel(ctx))
		}()
		return "started", nil
	})
	f := newFixture(t, model, func(c *manager.Config) { c.MaxConcurrent = 1 }, bgTool)
	mgr = f.mgr
	p, err := mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "parent"})
	require.NoError(t, err)
	parentCh <- p
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = p.Wait(ctx)
	require.NoError(t, err)
	bg.Wait()
	s := mgr.Slots()
	assert.Empty(t, s.TerminalHolders, "terminal agents holding a slot: %+v", s)
	assert.Zero(t, s.Running)
	assert.LessOrEqual(t, fl.max.Load(), int64(1), "agents inside a model call at once")
	later, err := mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "later"})
	require.NoError(t, err)
	wctx, wcancel := context.WithTimeout(context.Background(), time.Second)
	defer wcancel()
	_, err = later.Wait(wctx)
	assert.NoError(t, err, "a new agent runs once everything has ended")
	later.Cancel()
}

// D4: when a parent ends, releaseSlot starts its queued child before the
// parent's context is cancelled: the "queued" child goes Running and may
// call its model (turns=1); the pre-existing TestEndingAParentEndsItsChildren
// is flaky for this reason.
func TestQueuedChildOfAnEndedParentNeverRuns(t *testing.T) {
	started := 0
	for range 200 {
		release := make(chan struct{})
		model := byTask(map[string][]scripted.Step{
			"parent": {{Func: func(context.Context, []llms.MessageContent) scripted.Step { <-release; return scripted.Step{Text: "p"} }}},
			"child":  {{Block: true}},
		})
		f := newFixture(t, model, func(c *manager.Config) { c.MaxConcurrent = 1 })
		sub := f.mgr.Subscribe()
		parent, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "parent"})
		require.NoError(t, err)
		kid, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "child", ParentID: parent.ID()})
		require.NoError(t, err)
		close(release)
		_, err = kid.Wait(context.Background())
		require.NoError(t, err)
		ran := false
	drain:
		for {
			select {
			case e := <-sub.C():
				if e.AgentID == kid.ID() && e.Kind == manager.EventState && e.State == manager.Running {
					ran = true
				}
			default:
				break drain
			}
		}
		sub.Close()
		if ran {
			started++
		}
	}
	assert.Zero(t, started, "of 200 queued children of an ending parent, how many went Running")
}

// Stress: random trees with waits from tool calls (some with short
// timeouts, some in parallel), cancels and closes; checks slot invariants
// and the number of agents in a model call at once.
func TestSlotsStayCountedUnderStress(t *testing.T) {
	for _, timeouts := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "timeouts"}[timeouts], func(t *testing.T) {
			stress(t, timeouts)
		})
	}
}

func stress(t *testing.T, timeouts bool) {
	const max = 3
	var mgr *manager.Manager
	var fl inFlight
	work := func(ctx context.Context) { time.Sleep(time.Duration(1+time.Now().UnixNano()%3) * time.Millisecond) }
	model := byTask(map[string][]scripted.Step{
		"root": {
			{Calls: []scripted.Call{{Name: "kids"}, {Name: "kids"}}},
			counted(&fl, scripted.Step{Calls: []scripted.Call{{Name: "kids"}}}, work),
			counted(&fl, scripted.Step{Text: "root done"}, work),
		},
		"mid": {
			counted(&fl, scripted.Step{Calls: []scripted.Call{{Name: "kids"}, {Name: "kids"}}}, work),
			counted(&fl, scripted.Step{Text: "mid done"}, work),
		},
		"leaf": {counted(&fl, scripted.Step{Text: "leaf"}, work)},
	})
	kids := toolFunc("kids", func(ctx context.Context, _ json.RawMessage) (string, error) {
		env := agenttypes.EnvFrom(ctx)
		me, err := mgr.Get(env.AgentID)
		if err != nil {
			return "", err
		}
		task := "leaf"
		if me.Depth == 0 {
			task = "mid"
		}
		var reqs []manager.SpawnRequest
		for range 2 {
			reqs = append(reqs, manager.SpawnRequest{Type: "worker", Task: task, ParentID: env.AgentID})
		}
		wctx := ctx
		if timeouts {
			var cancel context.CancelFunc
			wctx, cancel = context.WithTimeout(ctx, 3*time.Millisecond)
			defer cancel()
		}
		_, err = mgr.SpawnParallel(wctx, reqs)
		if err != nil {
			return "gave up: " + err.Error(), nil
		}
		return "ok", nil
	})
	f := newFixture(t, model, func(c *manager.Config) { c.MaxConcurrent = max; c.MaxDepth = 2; c.ToolConcurrency = 4 }, kids)
	mgr = f.mgr
	stop := make(chan struct{})
	var checker sync.WaitGroup
	checker.Add(1)
	var bad []manager.SlotState
	go func() {
		defer checker.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			s := mgr.Slots()
			if s.Running != s.Holders || s.Running > max || s.Running < 0 {
				bad = append(bad, s)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	var roots []*manager.Agent
	for range 6 {
		r, err := mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "root"})
		require.NoError(t, err)
		roots = append(roots, r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := mgr.WaitAll(ctx, ids(roots)...)
	require.NoError(t, err, "every root ends: %+v", mgr.Slots())
	// Wait for stragglers (cancelled subtrees) to settle.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && mgr.Stats().Running+mgr.Stats().Pending > 0 {
		time.Sleep(time.Millisecond)
	}
	close(stop)
	checker.Wait()
	s := mgr.Slots()
	assert.Empty(t, bad, "slot invariant broken (first few): %+v", bad[:min(len(bad), 3)])
	assert.Equal(t, 0, s.Running, "no slot held once all ended: %+v", s)
	assert.LessOrEqual(t, fl.max.Load(), int64(max), "agents in a model call at once")
}

// Close in the middle of trees whose parents lend slots or sit among the
// resumers: Close returns, no goroutine leaks (goleak), no slot is held.
func TestCloseWhileAgentsLendTheirSlots(t *testing.T) {
	for i := range 30 {
		closeMidway(t, time.Duration(i%6)*time.Millisecond)
	}
}

func closeMidway(t *testing.T, after time.Duration) {
	var mgr *manager.Manager
	work := func(ctx context.Context) { time.Sleep(time.Millisecond) }
	model := byTask(map[string][]scripted.Step{
		"root": {{Calls: []scripted.Call{{Name: "kids"}, {Name: "kids"}}}, counted(&inFlight{}, scripted.Step{Text: "root done"}, work)},
		"mid":  {{Calls: []scripted.Call{{Name: "kids"}}}, {Text: "mid done"}},
		"leaf": {counted(&inFlight{}, scripted.Step{Text: "leaf"}, work)},
	})
	kids := toolFunc("kids", func(ctx context.Context, _ json.RawMessage) (string, error) {
		env := agenttypes.EnvFrom(ctx)
		me, err := mgr.Get(env.AgentID)
		if err != nil {
			return "", err
		}
		task := "leaf"
		if me.Depth == 0 {
			task = "mid"
		}
		_, err = mgr.SpawnParallel(ctx, []manager.SpawnRequest{{Type: "worker", Task: task, ParentID: env.AgentID}, {Type: "worker", Task: task, ParentID: env.AgentID}})
		if err != nil {
			return "", err
		}
		return "ok", nil
	})
	f := newFixture(t, model, func(c *manager.Config) { c.MaxConcurrent = 2; c.MaxDepth = 2 }, kids)
	mgr = f.mgr
	for range 4 {
		_, err := mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "root"})
		require.NoError(t, err)
	}
	time.Sleep(after)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, mgr.Close(ctx))
	s := mgr.Slots()
	assert.Zero(t, s.Running, "%+v", s)
	assert.Zero(t, s.Resumers+s.Queue+s.Lent, "%+v", s)
}

// D5: every wait from a tool call that ends before the awaited agent does
// (a poll with a timeout) leaves its slotWait in the awaited agent's waits
// until that agent ends: unbounded growth for a long child polled often.
func TestPolledWaitsDoNotAccumulate(t *testing.T) {
	var mgr *manager.Manager
	kid := make(chan *manager.Agent, 1)
	model := byTask(map[string][]scripted.Step{
		"parent": {{Calls: []scripted.Call{{Name: "poll"}}}, {Text: "parent done"}},
		"child":  {{Block: true}},
	})
	poll := toolFunc("poll", func(ctx context.Context, _ json.RawMessage) (string, error) {
		c, err := mgr.Spawn(ctx, manager.SpawnRequest{Type: "worker", Task: "child"})
		if err != nil {
			return "", err
		}
		for range 200 {
			wctx, cancel := context.WithTimeout(ctx, 100*time.Microsecond)
			_, _ = c.Wait(wctx)
			cancel()
		}
		kid <- c
		return "polled", nil
	})
	f := newFixture(t, model, func(c *manager.Config) { c.MaxConcurrent = 4 }, poll)
	mgr = f.mgr
	f.run(t, manager.SpawnRequest{Task: "parent"})
	c := <-kid
	assert.LessOrEqual(t, c.WaitsLen(), 1, "waits left registered on a running agent")
	c.Cancel()
}
