package manager_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

// goroutineID is the ID of the goroutine that calls it, from its stack's
// first line ("goroutine 42 [running]:").
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf), "goroutine "), " ")
	return id
}

// idleRunners counts the goroutines that ran an agent and wait for the
// next.
func idleRunners() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte("[select")) && bytes.Contains(g, []byte("manager.(*Manager).runner(")) {
			n++
		}
	}
	return n
}

// whereTool answers with the ID of the goroutine it runs on: the agent's
// own, since a turn's only call runs there.
func whereTool() *agenttypes.ToolFunc {
	return &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "where", Description: "says where it runs", ReadOnly: true},
		Func:     func(context.Context, json.RawMessage) (string, error) { return goroutineID(), nil },
	}
}

func whereModel() *scripted.Model {
	return scripted.New(scripted.Step{Calls: []scripted.Call{{Name: "where"}}}, scripted.Step{Text: "done"})
}

// An agent started while one that ended waits for work runs on that
// goroutine, whose stack has grown already.
func TestAnAgentRunsOnTheGoroutineOfOneThatEnded(t *testing.T) {
	f := newFixture(t, whereModel(), nil, whereTool())
	// Long enough for the second agent to come whatever else the
	// machine does.
	f.mgr.KeepRunnersFor(time.Minute)
	require.Eventually(t, func() bool { return idleRunners() == 0 }, 5*time.Second, time.Millisecond,
		"the runners of earlier tests' managers do not end")
	f.run(t, manager.SpawnRequest{})
	require.Eventually(t, func() bool { return idleRunners() == 1 }, 5*time.Second, time.Millisecond,
		"the goroutine that ran the first agent does not wait for another")
	f.run(t, manager.SpawnRequest{})
	first, second := whereItRan(t, f.model, 0), whereItRan(t, f.model, 1)
	assert.Equal(t, first, second, "the second agent ran on a goroutine of its own")
}

// whereItRan is the goroutine the where tool of the n-th agent run with
// whereModel ran on, from what the model was sent.
func whereItRan(t *testing.T, model *scripted.Model, n int) string {
	t.Helper()
	reqs := model.Requests()
	require.Greater(t, len(reqs), 2*n+1)
	results := scripted.ToolResults(reqs[2*n+1].Messages)
	require.Len(t, results, 1)
	return results[0].Content
}

// A goroutine kept for the next agent ends when none comes, without the
// manager closing.
func TestAnIdleRunnerEndsWhenNoAgentComes(t *testing.T) {
	f := newFixture(t, whereModel(), nil, whereTool())
	// Long enough to be seen waiting, and then ending.
	f.mgr.KeepRunnersFor(time.Second)
	require.Eventually(t, func() bool { return idleRunners() == 0 }, 5*time.Second, time.Millisecond,
		"the runners of earlier tests' managers do not end")
	f.run(t, manager.SpawnRequest{})
	require.Eventually(t, func() bool { return idleRunners() == 1 }, 5*time.Second, time.Millisecond,
		"the goroutine that ran the agent does not wait for another")
	assert.Eventually(t, func() bool { return idleRunners() == 0 }, 10*time.Second, 5*time.Millisecond,
		"a goroutine that ran an agent still waits for another")
}

// A turn's calls run on the agent's goroutine alone until they have run
// for the manager's helper delay: a quick turn starts no helper, so the
// next call waits for the first rather than begin beside it at once.
func TestATurnsCallsRunOnTheAgentsGoroutineUntilTheyTakeLong(t *testing.T) {
	began := make(chan struct{})
	var beganOnce sync.Once
	var beside atomic.Bool
	step := &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "step", Description: "says where it runs", ReadOnly: true},
		Func: func(_ context.Context, args json.RawMessage) (string, error) {
			var in struct{ First bool }
			if err := json.Unmarshal(args, &in); err != nil {
				return "", err
			}
			if !in.First {
				beganOnce.Do(func() { close(began) })
				return goroutineID(), nil
			}
			select {
			case <-began:
				beside.Store(true)
			case <-time.After(100 * time.Millisecond): // ample for a helper started at once to begin the next call
			}
			return goroutineID(), nil
		},
	}
	model := scripted.New(
		scripted.Step{Calls: []scripted.Call{{Name: "step", Args: `{"first":true}`}, {Name: "step"}, {Name: "step"}}},
		scripted.Step{Text: "done"},
	)
	f := newFixture(t, model, nil, step)
	f.mgr.StartToolHelpersAfter(time.Minute)
	res := f.run(t, manager.SpawnRequest{})
	require.Equal(t, manager.Completed, res.State)
	assert.False(t, beside.Load(), "a later call began on a helper while the first ran")
	results := scripted.ToolResults(model.Requests()[1].Messages)
	require.Len(t, results, 3)
	for _, r := range results[1:] {
		assert.Equal(t, results[0].Content, r.Content, "a call ran on a goroutine other than the agent's")
	}
}

// Many turns of calls, some quick and some not, with helpers that start
// after a microsecond, so that timers fire as turns end and begin: each
// call runs once, and never more than ToolConcurrency at once.
func TestTurnsOfQuickAndSlowCallsRunOnceEachWithinToolConcurrency(t *testing.T) {
	const turns, per, limit = 1000, 5, 2
	var inFlight, most atomic.Int32
	var ranMu sync.Mutex
	ran := map[string]int{}
	call := &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "call", Description: "counts itself", ReadOnly: true},
		Func: func(_ context.Context, args json.RawMessage) (string, error) {
			now := inFlight.Add(1)
			defer inFlight.Add(-1)
			for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
			}
			var in struct {
				ID   string
				Spin int
			}
			if err := json.Unmarshal(args, &in); err != nil {
				return "", err
			}
			ranMu.Lock()
			ran[in.ID]++
			ranMu.Unlock()
			time.Sleep(time.Duration(in.Spin) * time.Microsecond) // a call that takes a while, parked as one on a file or a socket is
			return "ok", nil
		},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	steps := make([]scripted.Step, 0, turns+1)
	for i := range turns {
		calls := make([]scripted.Call, per)
		for j := range calls {
			calls[j] = scripted.Call{Name: "call", Args: fmt.Sprintf(`{"id":"%d-%d","spin":%d}`, i, j, rng.IntN(90)/3*(rng.IntN(3)/2))}
		}
		steps = append(steps, scripted.Step{Calls: calls})
	}
	model := scripted.New(append(steps, scripted.Step{Text: "done"})...)
	f := newFixture(t, model, func(c *manager.Config) { c.ToolConcurrency = limit }, call)
	f.mgr.StartToolHelpersAfter(time.Microsecond)
	res := f.run(t, manager.SpawnRequest{Budget: agenttypes.Budget{MaxTurns: turns + 1, MaxToolCalls: turns * per}})
	require.Equal(t, manager.Completed, res.State, "%+v", res)
	require.Len(t, ran, turns*per)
	for id, n := range ran {
		require.Equal(t, 1, n, "call %s ran %d times", id, n)
	}
	assert.LessOrEqual(t, most.Load(), int32(limit), "more than ToolConcurrency calls at once")
}
