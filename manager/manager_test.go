package manager_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"
	"go.uber.org/goleak"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echoTool returns its "text" argument.
func echoTool(name string) *agenttypes.ToolFunc {
	return &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: name, Description: "echoes text", ReadOnly: true},
		Func: func(ctx context.Context, args json.RawMessage) (string, error) {
			var in struct{ Text string }
			if err := json.Unmarshal(args, &in); err != nil {
				return "", err
			}
			return name + ":" + in.Text, nil
		},
	}
}

type fixture struct {
	reg   *agenttypes.Registry
	model *scripted.Model
	mgr   *manager.Manager
}

func newFixture(t *testing.T, model *scripted.Model, mutate func(*manager.Config), tools ...agenttypes.Tool) *fixture {
	t.Helper()
	reg := agenttypes.NewRegistry()
	require.NoError(t, reg.RegisterTool(echoTool("echo")))
	require.NoError(t, reg.RegisterTool(echoTool("secret")))
	names := []string{"echo"}
	for _, tl := range tools {
		require.NoError(t, reg.RegisterTool(tl))
		names = append(names, tl.Spec().Name)
	}
	require.NoError(t, reg.RegisterType(agenttypes.Type{
		Name: "worker", Description: "does work", Prompt: "You work in {{.Dir}}.", Tools: names,
	}))
	cfg := manager.Config{
		Logger:       slog.New(slog.DiscardHandler),
		Registry:     reg,
		Models:       manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil }),
		DefaultModel: "scripted",
	}
	if mutate != nil {
		mutate(&cfg)
	}
	mgr, err := manager.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, mgr.Close(ctx))
	})
	return &fixture{reg: reg, model: model, mgr: mgr}
}

func (f *fixture) run(t *testing.T, req manager.SpawnRequest) manager.Result {
	t.Helper()
	if req.Type == "" {
		req.Type = "worker"
	}
	if req.Task == "" {
		req.Task = "do it"
	}
	a, err := f.mgr.Spawn(context.Background(), req)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := a.Wait(ctx)
	require.NoError(t, err)
	return res
}

func TestRunCompletesThroughToolCalls(t *testing.T) {
	model := scripted.New(
		scripted.Step{Text: "looking", Calls: []scripted.Call{
			{Name: "echo", Args: `{"text":"a"}`},
			{Name: "echo", Args: `{"text":"b"}`},
			{Name: "echo", Args: `{"text":"c"}`},
		}},
		scripted.Step{Text: "the answer"},
	)
	f := newFixture(t, model, nil)
	res := f.run(t, manager.SpawnRequest{Dir: t.TempDir()})

	assert.Equal(t, manager.Completed, res.State)
	assert.Equal(t, manager.ReasonDone, res.Reason)
	assert.False(t, res.Partial)
	assert.Equal(t, "the answer", res.Output)
	assert.Equal(t, 3, res.ToolCalls)
	assert.Equal(t, 2, res.Turns)
	assert.Positive(t, res.Usage.InputTokens)
	assert.NoError(t, res.Err)

	reqs := model.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, []string{"echo"}, reqs[0].Tools)
	assert.Contains(t, scripted.Text(reqs[0].Messages[0]), "You work in ", "system prompt is rendered")
	results := scripted.ToolResults(reqs[1].Messages)
	require.Len(t, results, 3)
	for i, want := range []string{"echo:a", "echo:b", "echo:c"} {
		assert.Equal(t, want, results[i].Content, "results go back in call order")
		assert.Equal(t, fmt.Sprintf("call_0_%d", i), results[i].ToolCallID)
	}
}

func TestConcurrentToolCallsKeepCallOrder(t *testing.T) {
	// Every call waits until all five are running at once, so the test
	// fails (rather than hangs) if calls run one at a time; then each
	// call waits for the one after it to finish, so they finish in the
	// reverse of their order.
	const n = 5
	var inFlight sync.WaitGroup
	inFlight.Add(n)
	together := make(chan struct{})
	go func() { inFlight.Wait(); close(together) }()
	var finished [n + 1]chan struct{}
	for i := range finished {
		finished[i] = make(chan struct{})
	}
	close(finished[n]) // the last call waits for none
	chain := &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "chain", Description: "finishes after the call after it"},
		Func: func(ctx context.Context, args json.RawMessage) (string, error) {
			var in struct{ I int }
			if err := json.Unmarshal(args, &in); err != nil {
				return "", err
			}
			inFlight.Done()
			for _, wait := range []chan struct{}{together, finished[in.I+1]} {
				select {
				case <-wait:
				case <-time.After(5 * time.Second):
					return "", errors.New("the calls did not run at the same time")
				}
			}
			defer close(finished[in.I])
			return fmt.Sprint(in.I), nil
		},
	}
	var calls []scripted.Call
	for i := range n {
		calls = append(calls, scripted.Call{Name: "chain", Args: fmt.Sprintf(`{"i":%d}`, i)})
	}
	model := scripted.New(scripted.Step{Calls: calls}, scripted.Step{Text: "done"})
	f := newFixture(t, model, func(c *manager.Config) { c.ToolConcurrency = n }, chain)
	res := f.run(t, manager.SpawnRequest{})
	require.Equal(t, manager.Completed, res.State)
	got := scripted.ToolResults(model.Requests()[1].Messages)
	require.Len(t, got, n)
	for i := range n {
		assert.Equal(t, fmt.Sprint(i), got[i].Content, "results go back in call order")
	}
}

func TestToolConcurrencyBoundsCallsInFlight(t *testing.T) {
	// Six calls, ToolConcurrency 2: the agent's goroutine and one helper
	// take them in order. Each call returns once another is in flight
	// beside it (or every call has started), so the test fails (rather
	// than hangs) when calls run one at a time, and sees it when more
	// than two run at once.
	const n, limit = 6, 2
	var inFlight, most, started atomic.Int32
	pair := &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "pair", Description: "returns once another call runs beside it"},
		Func: func(ctx context.Context, _ json.RawMessage) (string, error) {
			now := inFlight.Add(1)
			defer inFlight.Add(-1)
			started.Add(1)
			for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
			}
			deadline := time.Now().Add(5 * time.Second)
			for inFlight.Load() < limit && started.Load() < n {
				if time.Now().After(deadline) {
					return "", errors.New("no other call ran beside this one")
				}
				runtime.Gosched()
			}
			return "ok", nil
		},
	}
	calls := make([]scripted.Call, n)
	for i := range calls {
		calls[i] = scripted.Call{Name: "pair"}
	}
	model := scripted.New(scripted.Step{Calls: calls}, scripted.Step{Text: "done"})
	f := newFixture(t, model, func(c *manager.Config) { c.ToolConcurrency = limit }, pair)
	res := f.run(t, manager.SpawnRequest{})
	require.Equal(t, manager.Completed, res.State)
	for _, r := range scripted.ToolResults(model.Requests()[1].Messages) {
		assert.Equal(t, "ok", r.Content)
	}
	assert.Equal(t, int32(limit), most.Load(), "at most ToolConcurrency calls at once, and that many")
}

func TestDisallowedToolIsRefusedNotExecuted(t *testing.T) {
	var ran atomic.Bool
	secret := &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "wipe", Description: "must never run"},
		Func: func(context.Context, json.RawMessage) (string, error) {
			ran.Store(true)
			return "wiped", nil
		},
	}
	model := scripted.New(
		scripted.Step{Calls: []scripted.Call{{Name: "wipe"}, {Name: "secret"}, {Name: "nonexistent"}}},
		scripted.Step{Text: "ok"},
	)
	f := newFixture(t, model, nil)
	require.NoError(t, f.reg.RegisterTool(secret))
	res := f.run(t, manager.SpawnRequest{})
	assert.Equal(t, manager.Completed, res.State)
	assert.False(t, ran.Load(), "a tool the type does not allow must never run")
	assert.Equal(t, 0, res.ToolCalls, "refused calls are not executed")
	results := scripted.ToolResults(model.Requests()[1].Messages)
	require.Len(t, results, 3, "every refused call is answered")
	for _, r := range results {
		assert.Contains(t, r.Content, "not available to this agent")
		assert.Contains(t, r.Content, "echo", "the refusal names the tools there are")
	}
}

func TestToolErrorGoesToModel(t *testing.T) {
	failing := &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "fail", Description: "fails"},
		Func:     func(context.Context, json.RawMessage) (string, error) { return "", errors.New("disk on fire") },
	}
	model := scripted.New(scripted.Step{Calls: []scripted.Call{{Name: "fail"}}}, scripted.Step{Text: "recovered"})
	f := newFixture(t, model, nil, failing)
	res := f.run(t, manager.SpawnRequest{})
	assert.Equal(t, manager.Completed, res.State)
	assert.Equal(t, "error: disk on fire", scripted.ToolResults(model.Requests()[1].Messages)[0].Content)
}

func TestToolPanicFailsOnlyThatAgent(t *testing.T) {
	boom := &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "boom", Description: "panics"},
		Func: func(_ context.Context, args json.RawMessage) (string, error) {
			if string(args) == `{"panic":true}` {
				panic("kaboom")
			}
			return "fine", nil
		},
	}
	model := scripted.New(scripted.Step{Func: func(_ context.Context, msgs []llms.MessageContent) scripted.Step {
		if scripted.Text(msgs[1]) == "explode" {
			return scripted.Step{Text: "trying", Calls: []scripted.Call{{Name: "boom", Args: `{"panic":true}`}}}
		}
		return scripted.Step{Calls: []scripted.Call{{Name: "boom", Args: `{}`}}}
	}}, scripted.Step{Text: "survived"})
	var logs bytes.Buffer
	f := newFixture(t, model, func(c *manager.Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) }, boom)

	bad, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "explode"})
	require.NoError(t, err)
	good, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "behave"})
	require.NoError(t, err)
	results, err := f.mgr.WaitAll(context.Background(), bad.ID(), good.ID())
	require.NoError(t, err)

	assert.Equal(t, manager.Failed, results[0].State)
	assert.Equal(t, manager.ReasonToolPanic, results[0].Reason)
	assert.True(t, results[0].Partial)
	assert.Equal(t, "trying", results[0].Output)
	assert.ErrorIs(t, results[0].Err, manager.ErrToolPanic)
	assert.Contains(t, results[0].Error, "kaboom")

	assert.Equal(t, manager.Completed, results[1].State)
	assert.Equal(t, "survived", results[1].Output)
	assert.Contains(t, logs.String(), "kaboom")
	assert.Contains(t, logs.String(), "goroutine", "the log keeps the panic's stack")
}

func TestModelPanicAndErrorFailTheAgent(t *testing.T) {
	for name, step := range map[string]scripted.Step{
		"panic": {Panic: "model exploded"},
		"error": {Err: errors.New("upstream 500")},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, scripted.New(step), nil)
			res := f.run(t, manager.SpawnRequest{})
			assert.Equal(t, manager.Failed, res.State)
			assert.Equal(t, manager.ReasonModelError, res.Reason)
			assert.Error(t, res.Err)
		})
	}
}

func loopingModel() *scripted.Model {
	steps := make([]scripted.Step, 50)
	for i := range steps {
		steps[i] = scripted.Step{Text: fmt.Sprintf("step %d", i), Calls: []scripted.Call{{Name: "echo", Args: `{"text":"x"}`}, {Name: "echo", Args: `{"text":"y"}`}}}
	}
	return scripted.New(steps...)
}

func TestBudgetsEndTheRun(t *testing.T) {
	tests := []struct {
		name       string
		budget     agenttypes.Budget
		reason     manager.Reason
		check      func(t *testing.T, res manager.Result)
		modelSteps *scripted.Model
	}{
		{
			name: "turns", budget: agenttypes.Budget{MaxTurns: 3}, reason: manager.ReasonBudgetTurns,
			check: func(t *testing.T, res manager.Result) { assert.Equal(t, 3, res.Turns) },
		},
		{
			name: "tool calls", budget: agenttypes.Budget{MaxToolCalls: 5}, reason: manager.ReasonBudgetToolCalls,
			check: func(t *testing.T, res manager.Result) {
				assert.Equal(t, 5, res.ToolCalls, "never more calls than the budget")
			},
		},
		{
			name: "tokens", budget: agenttypes.Budget{MaxTokens: 400}, reason: manager.ReasonBudgetTokens,
			check: func(t *testing.T, res manager.Result) {
				assert.LessOrEqual(t, res.Usage.Total(), 400+50, "overshoot is bounded by one call's estimate error")
			},
		},
		{
			// The provider's counts (150 a call) come back past the budget
			// after the third call: the post-call check ends the run.
			name: "tokens counted by the provider", budget: agenttypes.Budget{MaxTokens: 449}, reason: manager.ReasonBudgetTokens,
			modelSteps: scripted.New(
				scripted.Step{Text: "one", Calls: []scripted.Call{{Name: "echo", Args: `{"text":"x"}`}}, InputTokens: 100, OutputTokens: 50},
				scripted.Step{Text: "two", Calls: []scripted.Call{{Name: "echo", Args: `{"text":"x"}`}}, InputTokens: 100, OutputTokens: 50},
				scripted.Step{Text: "three", Calls: []scripted.Call{{Name: "echo", Args: `{"text":"x"}`}}, InputTokens: 100, OutputTokens: 50},
			),
			check: func(t *testing.T, res manager.Result) {
				assert.Equal(t, 450, res.Usage.Total())
				assert.Equal(t, 2, res.ToolCalls, "the third turn's call is not run on tokens the run did not have")
			},
		},
		{
			name: "time", budget: agenttypes.Budget{MaxTime: 200 * time.Millisecond}, reason: manager.ReasonBudgetTime,
			modelSteps: scripted.New(scripted.Step{Text: "thinking", Calls: []scripted.Call{{Name: "echo", Args: `{"text":"x"}`}}}, scripted.Step{Block: true}),
			check: func(t *testing.T, res manager.Result) {
				assert.ErrorIs(t, res.Err, context.DeadlineExceeded)
				assert.Equal(t, "thinking", res.Output)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model := tt.modelSteps
			if model == nil {
				model = loopingModel()
			}
			f := newFixture(t, model, nil)
			res := f.run(t, manager.SpawnRequest{Budget: tt.budget})
			assert.Equal(t, manager.Failed, res.State)
			assert.Equal(t, tt.reason, res.Reason)
			assert.True(t, res.Partial)
			assert.ErrorIs(t, res.Err, manager.ErrBudgetExceeded)
			assert.NotEmpty(t, res.Output, "a partial run returns the last assistant text")
			tt.check(t, res)
		})
	}
}

func TestTokenBudgetCapsEachCall(t *testing.T) {
	model := scripted.New(
		scripted.Step{Calls: []scripted.Call{{Name: "echo", Args: `{"text":"x"}`}}, InputTokens: 300, OutputTokens: 100},
		scripted.Step{Text: "done", InputTokens: 420, OutputTokens: 10},
	)
	f := newFixture(t, model, nil)
	res := f.run(t, manager.SpawnRequest{Budget: agenttypes.Budget{MaxTokens: 1000}})
	require.Equal(t, manager.Completed, res.State)
	reqs := model.Requests()
	require.Len(t, reqs, 2)
	assert.Greater(t, reqs[0].MaxTokens, reqs[1].MaxTokens)
	assert.LessOrEqual(t, reqs[1].MaxTokens, 1000-400, "the second call may use only what is left")
	assert.Equal(t, manager.Usage{InputTokens: 720, OutputTokens: 110}, res.Usage, "provider counts are used as given")
}

func TestTokenBudgetRefusesACallThatCannotFit(t *testing.T) {
	model := scripted.New(scripted.Step{Text: "never"})
	f := newFixture(t, model, nil)
	res := f.run(t, manager.SpawnRequest{Budget: agenttypes.Budget{MaxTokens: 10}})
	assert.Equal(t, manager.ReasonBudgetTokens, res.Reason)
	assert.Empty(t, model.Requests(), "no model call is made when the budget cannot fit one")
}

func TestNotesAreReturnedWhenCutShort(t *testing.T) {
	note := &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "note", Description: "notes"},
		Func: func(ctx context.Context, args json.RawMessage) (string, error) {
			agenttypes.EnvFrom(ctx).Note("found the parser in parse.go")
			return "noted", nil
		},
	}
	model := scripted.New(scripted.Step{Text: "half way", Calls: []scripted.Call{{Name: "note"}}}, scripted.Step{Block: true})
	f := newFixture(t, model, nil, note)
	res := f.run(t, manager.SpawnRequest{Budget: agenttypes.Budget{MaxTime: 200 * time.Millisecond}})
	assert.Equal(t, manager.ReasonBudgetTime, res.Reason)
	assert.Contains(t, res.Output, "half way")
	assert.Contains(t, res.Output, "found the parser in parse.go")
}

func TestJSONOutputIsParsedWithOneRetry(t *testing.T) {
	model := scripted.New(scripted.Step{Text: "here you go: {oops"}, scripted.Step{Text: "```json\n{\"files\": 3}\n```"})
	f := newFixture(t, model, nil)
	require.NoError(t, f.reg.RegisterType(agenttypes.Type{
		Name: "counter", Description: "counts", Output: agenttypes.Output{Format: agenttypes.OutputJSON},
	}))
	res := f.run(t, manager.SpawnRequest{Type: "counter"})
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.Equal(t, map[string]any{"files": json.Number("3")}, res.Data, "numbers keep their exact form")

	model2 := scripted.New(scripted.Step{Text: "nope"}, scripted.Step{Text: "still nope"})
	f2 := newFixture(t, model2, nil)
	require.NoError(t, f2.reg.RegisterType(agenttypes.Type{
		Name: "counter", Description: "counts", Output: agenttypes.Output{Format: agenttypes.OutputJSON},
	}))
	res = f2.run(t, manager.SpawnRequest{Type: "counter"})
	assert.Equal(t, manager.ReasonBadOutput, res.Reason)
	assert.ErrorIs(t, res.Err, manager.ErrBadOutput)
}

func TestJSONOutputIsValidatedAgainstTheSchema(t *testing.T) {
	model := scripted.New(scripted.Step{Text: `{"files": "three"}`}, scripted.Step{Text: `{"files": 3}`})
	f := newFixture(t, model, nil)
	require.NoError(t, f.reg.RegisterType(agenttypes.Type{
		Name: "counter", Description: "counts",
		Output: agenttypes.Output{Format: agenttypes.OutputJSON, Schema: []byte(`{"type":"object","properties":{"files":{"type":"integer"}},"required":["files"]}`)},
	}))
	res := f.run(t, manager.SpawnRequest{Type: "counter"})
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.Equal(t, map[string]any{"files": json.Number("3")}, res.Data, "numbers keep their exact form")
	reqs := model.Requests()
	require.Len(t, reqs, 2)
	retry := scripted.Text(reqs[1].Messages[len(reqs[1].Messages)-1])
	assert.Contains(t, retry, "files", "the model is told what was wrong")
}

func TestSpawnRejectsBadInputAndChangesNothing(t *testing.T) {
	f := newFixture(t, scripted.New(scripted.Step{Text: "x"}), nil)
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	tests := []struct {
		name string
		req  manager.SpawnRequest
		want error
		msg  string
	}{
		{"unknown type", manager.SpawnRequest{Type: "nope", Task: "x"}, manager.ErrUnknownType, `unknown agent type "nope"`},
		{"empty task", manager.SpawnRequest{Type: "worker", Task: "  "}, manager.ErrBadRequest, "task is empty"},
		{"missing dir", manager.SpawnRequest{Type: "worker", Task: "x", Dir: "/does/not/exist"}, manager.ErrBadRequest, "exist"},
		{"file as dir", manager.SpawnRequest{Type: "worker", Task: "x", Dir: file}, manager.ErrBadRequest, "not a directory"},
		{"negative budget", manager.SpawnRequest{Type: "worker", Task: "x", Budget: agenttypes.Budget{MaxTurns: -1}}, manager.ErrBadRequest, "positive"},
		{"unknown parent", manager.SpawnRequest{Type: "worker", Task: "x", ParentID: "ghost"}, manager.ErrNotFound, "ghost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.mgr.Spawn(context.Background(), tt.req)
			require.ErrorIs(t, err, tt.want)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
	assert.Empty(t, f.mgr.List(manager.Filter{}), "no agent was created")
	assert.Equal(t, manager.Stats{}, f.mgr.Stats())
}

func TestModelResolution(t *testing.T) {
	reg := agenttypes.NewRegistry()
	require.NoError(t, reg.RegisterType(agenttypes.Type{Name: "pinned", Description: "d", Model: "b"}))
	require.NoError(t, reg.RegisterType(agenttypes.Type{Name: "thinker", Description: "d", NeedsLanguageModel: true}))
	var asked []string
	var mu sync.Mutex
	models := map[string]llms.Model{"a": scripted.New(scripted.Step{Text: "from a"}), "b": scripted.New(scripted.Step{Text: "from b"}), "offline": retrieval{scripted.New(scripted.Step{Text: "found"})}}
	mgr, err := manager.New(manager.Config{Registry: reg, DefaultModel: "a", Models: manager.ModelResolverFunc(func(_ context.Context, name string) (llms.Model, error) {
		mu.Lock()
		asked = append(asked, name)
		mu.Unlock()
		if m, ok := models[name]; ok {
			return m, nil
		}
		return nil, fmt.Errorf("no provider for %q", name)
	})})
	require.NoError(t, err)
	defer mgr.Close(context.Background())

	run := func(req manager.SpawnRequest) manager.Result {
		a, err := mgr.Spawn(context.Background(), req)
		require.NoError(t, err)
		r, err := a.Wait(context.Background())
		require.NoError(t, err)
		return r
	}
	assert.Equal(t, "from b", run(manager.SpawnRequest{Type: "pinned", Task: "t"}).Output, "the type's model wins over the default")
	assert.Equal(t, "from a", run(manager.SpawnRequest{Type: "pinned", Task: "t", Model: "a"}).Output, "the request's model wins over the type's")
	assert.Equal(t, "from a", run(manager.SpawnRequest{Type: "thinker", Task: "t"}).Output)

	_, err = mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "thinker", Task: "t", Model: "zz:unknown"})
	require.ErrorIs(t, err, manager.ErrModel)
	assert.Contains(t, err.Error(), "zz:unknown")

	_, err = mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "thinker", Task: "t", Model: "offline"})
	require.ErrorIs(t, err, manager.ErrModel)
	assert.Contains(t, err.Error(), "needs a language model")
	assert.Contains(t, err.Error(), "Config.DefaultModel", "the library says what to set in library terms")
	assert.NotContains(t, err.Error(), "--model", "the library does not speak of command-line flags")
	assert.Equal(t, 1, count(asked, "b"), "a resolved model is reused")
}

type retrieval struct{ *scripted.Model }

func (retrieval) RetrievalOnly() bool { return true }

func count(xs []string, x string) (n int) {
	for _, v := range xs {
		if v == x {
			n++
		}
	}
	return n
}

func TestQueueIsFIFOAndBounded(t *testing.T) {
	release := make(chan struct{})
	var order []string
	var mu sync.Mutex
	model := scripted.New(scripted.Step{Func: func(ctx context.Context, msgs []llms.MessageContent) scripted.Step {
		mu.Lock()
		order = append(order, scripted.Text(msgs[1]))
		mu.Unlock()
		<-release
		return scripted.Step{Text: "ok"}
	}})
	f := newFixture(t, model, func(c *manager.Config) { c.MaxConcurrent = 1; c.MaxQueue = 3 })
	var agents []*manager.Agent
	for i := range 4 {
		a, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: fmt.Sprint(i)})
		require.NoError(t, err)
		agents = append(agents, a)
	}
	_, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "overflow"})
	require.ErrorIs(t, err, manager.ErrQueueFull)

	require.Eventually(t, func() bool { return f.mgr.Stats().Running == 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, 3, f.mgr.Stats().Pending)
	assert.Len(t, f.mgr.List(manager.Filter{States: []manager.State{manager.Pending}}), 3)

	// Cancel a pending one: it ends at once and never runs.
	require.NoError(t, f.mgr.Cancel(agents[2].ID()))
	res, err := agents[2].Wait(context.Background())
	require.NoError(t, err)
	assert.Equal(t, manager.Cancelled, res.State)
	assert.Equal(t, 0, res.Turns)

	close(release)
	ids := []string{agents[0].ID(), agents[1].ID(), agents[2].ID(), agents[3].ID()}
	results, err := f.mgr.WaitAll(context.Background(), ids...)
	require.NoError(t, err)
	for i, r := range results {
		assert.Equal(t, ids[i], r.ID, "WaitAll returns results in the order asked")
	}
	assert.Equal(t, []string{"0", "1", "3"}, order, "pending agents start first in, first out")
}

func TestCancelRunningAgent(t *testing.T) {
	model := scripted.New(scripted.Step{Text: "started", Calls: []scripted.Call{{Name: "echo", Args: `{"text":"x"}`}}}, scripted.Step{Block: true})
	f := newFixture(t, model, nil)
	a, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "t"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(model.Requests()) == 2 }, 5*time.Second, time.Millisecond)
	a.Cancel()
	res, err := a.Wait(context.Background())
	require.NoError(t, err)
	assert.Equal(t, manager.Cancelled, res.State)
	assert.Equal(t, manager.ReasonCancelled, res.Reason)
	assert.ErrorIs(t, res.Err, context.Canceled)
	assert.True(t, res.Partial)
	assert.Equal(t, "started", res.Output)

	a.Cancel() // cancelling an ended agent changes nothing
	info := a.Info()
	assert.Equal(t, manager.Cancelled, info.State)
	assert.False(t, info.Ended.Before(info.Started))
}

// TestLifecycleUnderConcurrentCancel spawns many agents and cancels them
// from many goroutines at once while they run; every agent must pass only
// through legal transitions and end exactly once.
func TestLifecycleUnderConcurrentCancel(t *testing.T) {
	model := scripted.New(
		scripted.Step{Calls: []scripted.Call{{Name: "echo", Args: `{"text":"x"}`}}},
		scripted.Step{Delay: time.Millisecond, Calls: []scripted.Call{{Name: "echo", Args: `{"text":"y"}`}}},
		scripted.Step{Text: "done"},
	).WithoutRecording()
	f := newFixture(t, model, func(c *manager.Config) { c.MaxConcurrent = 16 })
	sub := f.mgr.Subscribe()
	var completions atomic.Int64
	f.mgr.OnComplete(func(manager.Info) { completions.Add(1) })

	const n = 300
	agents := make([]*manager.Agent, n)
	for i := range agents {
		a, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "t"})
		require.NoError(t, err)
		agents[i] = a
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < n; i += 3 {
				agents[i].Cancel()
			}
			f.mgr.CancelAll()
		})
	}
	wg.Wait()
	for _, a := range agents {
		<-a.Done()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, f.mgr.Close(ctx))

	last := map[string]manager.State{}
	ended := map[string]int{}
	var seq uint64
	for e := range sub.C() {
		assert.Greater(t, e.Seq, seq, "a subscription sees Seq rise")
		seq = e.Seq
		if e.Kind == manager.EventSpawned {
			last[e.AgentID] = e.State
		}
		if e.Kind == manager.EventState {
			assert.Equal(t, last[e.AgentID], e.From, "transitions chain")
			assert.True(t, manager.CanTransition(e.From, e.State), "%s → %s", e.From, e.State)
			last[e.AgentID] = e.State
		}
		if e.Kind == manager.EventCompleted {
			ended[e.AgentID]++
		}
	}
	require.Len(t, ended, n)
	for id, c := range ended {
		assert.Equal(t, 1, c, "agent %s ended once", id)
		assert.True(t, last[id].Terminal())
	}
	assert.Equal(t, int64(n), completions.Load())
	st := f.mgr.Stats()
	assert.Equal(t, n, st.Completed+st.Failed+st.Cancelled)
	assert.Zero(t, st.Pending+st.Running)
}

func TestTransitionTable(t *testing.T) {
	states := []manager.State{manager.Pending, manager.Running, manager.Completed, manager.Failed, manager.Cancelled}
	allowed := map[[2]manager.State]bool{
		{manager.Pending, manager.Running}:   true,
		{manager.Pending, manager.Cancelled}: true,
		{manager.Running, manager.Completed}: true,
		{manager.Running, manager.Failed}:    true,
		{manager.Running, manager.Cancelled}: true,
	}
	for _, from := range states {
		for _, to := range states {
			assert.Equal(t, allowed[[2]manager.State{from, to}], manager.CanTransition(from, to), "%s → %s", from, to)
		}
	}
}

func TestSpawnParallelReturnsInputOrder(t *testing.T) {
	model := scripted.New(scripted.Step{Func: func(_ context.Context, msgs []llms.MessageContent) scripted.Step {
		task := scripted.Text(msgs[1])
		var ms int
		fmt.Sscan(task, &ms)
		return scripted.Step{Text: "answer " + task, Delay: time.Duration(ms) * time.Millisecond}
	}})
	f := newFixture(t, model, func(c *manager.Config) { c.MaxConcurrent = 4 })
	var reqs []manager.SpawnRequest
	for _, ms := range []int{40, 1, 20, 5} {
		reqs = append(reqs, manager.SpawnRequest{Type: "worker", Task: fmt.Sprint(ms)})
	}
	results, err := f.mgr.SpawnParallel(context.Background(), reqs)
	require.NoError(t, err)
	for i, ms := range []int{40, 1, 20, 5} {
		assert.Equal(t, fmt.Sprintf("answer %d", ms), results[i].Output)
	}

	reqs = append(reqs, manager.SpawnRequest{Type: "nope", Task: "x"})
	_, err = f.mgr.SpawnParallel(context.Background(), reqs)
	require.ErrorIs(t, err, manager.ErrUnknownType)
	assert.Contains(t, err.Error(), "request 4")
	assert.Len(t, f.mgr.List(manager.Filter{}), 4, "a bad group spawns nothing")
}

func TestDepthLimit(t *testing.T) {
	model := scripted.New(scripted.Step{Block: true})
	f := newFixture(t, model, nil)
	top, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "t"})
	require.NoError(t, err)
	child, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "t", ParentID: top.ID()})
	require.NoError(t, err)
	assert.Equal(t, 1, child.Info().Depth)
	_, err = f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "t", ParentID: child.ID()})
	require.ErrorIs(t, err, manager.ErrDepthExceeded)
	assert.Len(t, f.mgr.List(manager.Filter{ParentID: top.ID()}), 1)
}

func TestCloseCancelsEverythingAndRefusesSpawns(t *testing.T) {
	model := scripted.New(scripted.Step{Block: true})
	f := newFixture(t, model, func(c *manager.Config) { c.MaxConcurrent = 2 })
	var agents []*manager.Agent
	for range 5 {
		a, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "t"})
		require.NoError(t, err)
		agents = append(agents, a)
	}
	require.NoError(t, f.mgr.Close(context.Background()))
	for i, a := range agents {
		res, err := a.Wait(context.Background())
		require.NoError(t, err)
		assert.Equal(t, manager.Cancelled, res.State)
		assert.Equal(t, manager.ReasonShutdown, res.Reason, "agent %d, running or pending, ends by shutdown", i)
	}
	_, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "t"})
	assert.ErrorIs(t, err, manager.ErrClosed)
}

func TestTranscriptIsWrittenAsItGoes(t *testing.T) {
	dir := t.TempDir()
	model := scripted.New(scripted.Step{Text: "looking", Calls: []scripted.Call{{Name: "echo", Args: `{"text":"hi"}`}}}, scripted.Step{Text: "bye"})
	f := newFixture(t, model, func(c *manager.Config) { c.TranscriptDir = dir })
	res := f.run(t, manager.SpawnRequest{})
	require.Equal(t, filepath.Join(dir, f.mgr.ID()+".jsonl"), res.Transcript, "one transcript per manager")
	require.Equal(t, res.Transcript, f.mgr.TranscriptPath())
	fh, err := os.Open(res.Transcript)
	require.NoError(t, err)
	defer fh.Close()
	var kinds []manager.EventKind
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		var e manager.Event
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e))
		assert.Equal(t, res.ID, e.AgentID)
		kinds = append(kinds, e.Kind)
	}
	assert.Equal(t, []manager.EventKind{
		manager.EventSpawned, manager.EventState, manager.EventModelCall, manager.EventToolCall,
		manager.EventToolResult, manager.EventModelCall, manager.EventState, manager.EventCompleted,
	}, kinds)
}

func TestStatsAndListFilters(t *testing.T) {
	model := scripted.New(
		scripted.Step{Calls: []scripted.Call{{Name: "echo", Args: `{"text":"x"}`}}, InputTokens: 10, OutputTokens: 5, CostUSD: 0.001},
		scripted.Step{Text: "ok", InputTokens: 20, OutputTokens: 2, CostUSD: 0.0005},
	)
	f := newFixture(t, model, nil)
	for range 3 {
		f.run(t, manager.SpawnRequest{})
	}
	st := f.mgr.Stats()
	assert.Equal(t, 3, st.Completed)
	assert.Equal(t, 90, st.Usage.InputTokens)
	assert.Equal(t, 21, st.Usage.OutputTokens)
	assert.InDelta(t, 0.0045, st.Usage.CostUSD, 1e-9, "cost adds up across calls and agents")
	for _, info := range f.mgr.List(manager.Filter{}) {
		assert.InDelta(t, 0.0015, info.Usage.CostUSD, 1e-9)
	}
	assert.Equal(t, 3, st.ToolCalls)
	assert.Equal(t, 6, st.Turns)
	assert.Len(t, f.mgr.List(manager.Filter{Type: "worker", States: []manager.State{manager.Completed}}), 3)
	assert.Empty(t, f.mgr.List(manager.Filter{Type: "other"}))
	_, err := f.mgr.Get("missing")
	assert.ErrorIs(t, err, manager.ErrNotFound)
}

func TestWaitHonoursContext(t *testing.T) {
	f := newFixture(t, scripted.New(scripted.Step{Block: true}), nil)
	a, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "t"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = f.mgr.Wait(ctx, a.ID())
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestResultJSON(t *testing.T) {
	f := newFixture(t, scripted.New(scripted.Step{Text: "ok"}), nil)
	res := f.run(t, manager.SpawnRequest{})
	b, err := json.Marshal(res)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	for _, k := range []string{"id", "type", "model", "state", "reason", "partial", "output", "usage", "tool_calls", "turns", "duration_ms"} {
		assert.Contains(t, m, k)
	}
	assert.Equal(t, "completed", m["state"])
}

func TestReadAndPruneTranscripts(t *testing.T) {
	dir := t.TempDir()
	model := scripted.New(scripted.Step{Text: "bye"})
	f := newFixture(t, model, func(c *manager.Config) { c.TranscriptDir = dir })
	res := f.run(t, manager.SpawnRequest{})

	// A crash mid-write leaves a torn last line; everything before it reads.
	fh, err := os.OpenFile(res.Transcript, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = fh.WriteString(`{"seq":99,"kind":"mod`)
	require.NoError(t, err)
	require.NoError(t, fh.Close())
	events, err := manager.ReadTranscript(res.Transcript)
	require.NoError(t, err)
	require.NotEmpty(t, events)
	assert.Equal(t, manager.EventCompleted, events[len(events)-1].Kind)

	old := filepath.Join(dir, "old.jsonl")
	require.NoError(t, os.WriteFile(old, []byte("{}\n"), 0o600))
	past := time.Now().Add(-8 * 24 * time.Hour)
	require.NoError(t, os.Chtimes(old, past, past))
	n, err := manager.PruneTranscripts(dir, manager.DefaultRetention)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.NoFileExists(t, old)
	assert.FileExists(t, res.Transcript)
	n, err = manager.PruneTranscripts(filepath.Join(dir, "missing"), time.Hour)
	assert.NoError(t, err)
	assert.Zero(t, n)
}

func TestStreamedTextReachesSubscribersOnly(t *testing.T) {
	dir := t.TempDir()
	model := scripted.New(scripted.Step{Text: "looking around", Calls: []scripted.Call{{Name: "echo", Args: `{"text":"x"}`}}}, scripted.Step{Text: "the final answer"})
	f := newFixture(t, model, func(c *manager.Config) { c.Stream = true; c.TranscriptDir = dir })
	sub := f.mgr.Subscribe()
	res := f.run(t, manager.SpawnRequest{})
	require.Equal(t, manager.Completed, res.State)
	require.NoError(t, f.mgr.Close(context.Background()))
	var streamed strings.Builder
	turns := map[int]bool{}
	for e := range sub.C() {
		if e.Kind == manager.EventModelDelta {
			streamed.WriteString(e.Text)
			turns[e.Turn] = true
		}
	}
	assert.Equal(t, "looking aroundthe final answer", streamed.String())
	assert.Equal(t, map[int]bool{1: true, 2: true}, turns)
	events, err := manager.ReadTranscript(res.Transcript)
	require.NoError(t, err)
	for _, e := range events {
		assert.NotEqual(t, manager.EventModelDelta, e.Kind, "deltas stay out of transcripts")
	}
}

func TestCloseWaitsForOnComplete(t *testing.T) {
	f := newFixture(t, scripted.New(scripted.Step{Text: "done"}), nil)
	// The callback closes the manager when the work is done (from another
	// goroutine, as OnComplete says) and waits for Close to return. A Close
	// that waits for the callback can return only when its context ends.
	closedDuring := make(chan error, 1)
	f.mgr.OnComplete(func(manager.Info) {
		closed := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			closed <- f.mgr.Close(ctx)
		}()
		closedDuring <- <-closed
	})
	f.run(t, manager.SpawnRequest{})
	assert.ErrorIs(t, <-closedDuring, context.DeadlineExceeded, "Close returned while a callback was still running")
	require.NoError(t, f.mgr.Close(context.Background()), "with the callback over, Close returns")
}

func TestSubscriptionClosesAfterACloseThatTimedOut(t *testing.T) {
	release, entered := make(chan struct{}), make(chan struct{})
	model := scripted.New(scripted.Step{Func: func(context.Context, []llms.MessageContent) scripted.Step {
		close(entered)
		<-release // ignores cancellation, as a stubborn model might
		return scripted.Step{Text: "late"}
	}})
	f := newFixture(t, model, nil)
	sub := f.mgr.Subscribe()
	_, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "t"})
	require.NoError(t, err)
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, f.mgr.Close(ctx), context.DeadlineExceeded)
	close(release)
	for range sub.C() { // ends once the agent has
	}
}

func TestSnapshotNeverTerminalWithoutReason(t *testing.T) {
	f := newFixture(t, scripted.New(scripted.Step{Text: "done"}).WithoutRecording(), func(c *manager.Config) { c.MaxConcurrent = 4 })
	for range 200 {
		a, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "t"})
		require.NoError(t, err)
		for {
			info := a.Info()
			if info.State.Terminal() {
				require.NotEmpty(t, info.Reason, "a terminal snapshot carries its reason")
				break
			}
		}
	}
}

func TestEndedAgentsAreForgottenBeyondKeepEnded(t *testing.T) {
	f := newFixture(t, scripted.New(scripted.Step{Text: "ok"}), func(c *manager.Config) { c.KeepEnded = 2 })
	var ids []string
	for range 5 {
		ids = append(ids, f.run(t, manager.SpawnRequest{}).ID)
	}
	assert.Len(t, f.mgr.List(manager.Filter{}), 2)
	_, err := f.mgr.Get(ids[0])
	assert.ErrorIs(t, err, manager.ErrNotFound, "the oldest ended agent is forgotten")
	_, err = f.mgr.Get(ids[4])
	assert.NoError(t, err, "the newest is kept")
	assert.Equal(t, 5, f.mgr.Stats().Completed, "counters still count every agent")
}

func TestConversationsAreDroppedBeyondKeepConversations(t *testing.T) {
	f := newFixture(t, scripted.New(scripted.Step{Text: "ok"}, scripted.Step{Text: "again"}), func(c *manager.Config) { c.KeepConversations = 2 })
	var ids []string
	for range 3 {
		ids = append(ids, f.run(t, manager.SpawnRequest{}).ID)
	}
	_, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "more", Resume: ids[0]})
	require.ErrorIs(t, err, manager.ErrBadRequest, "the oldest conversation is dropped")
	assert.Contains(t, err.Error(), "no longer kept")
	res := f.run(t, manager.SpawnRequest{Task: "more", Resume: ids[1]})
	assert.Equal(t, "again", res.Output, "a conversation among the last two is kept")
}

// An agent's conversation starts with room for as many messages as the
// last of its type's held: agents of a type talk about as long, and
// growing to it copied the conversation over and over.
func TestAConversationStartsWithRoomForTheLastOfItsType(t *testing.T) {
	turn := scripted.Step{Text: "looking", Calls: []scripted.Call{{Name: "echo", Args: `{"text":"a"}`}, {Name: "echo", Args: `{"text":"b"}`}}}
	f := newFixture(t, scripted.New(turn, turn, turn, turn, scripted.Step{Text: "done"}), nil)
	spawn := func() *manager.Agent {
		a, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "do it", Dir: t.TempDir()})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := a.Wait(ctx)
		require.NoError(t, err)
		require.Equal(t, manager.Completed, res.State)
		return a
	}
	first, _ := spawn().ConversationSize()
	require.Greater(t, first, 8, "longer than a conversation's least room")
	n, room := spawn().ConversationSize()
	assert.Equal(t, first, n)
	assert.Equal(t, first, room, "the second conversation started with room for the first's, and did not grow")
}
