package managertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

// TestLoop runs the conformance cases against loop; nil is the manager's
// own loop.
func TestLoop(t *testing.T, loop agenttypes.Loop) {
	t.Run("hooks", func(t *testing.T) { testHooks(t, loop) })
	t.Run("budgets", func(t *testing.T) { testBudgets(t, loop) })
	t.Run("an answer past the budget", func(t *testing.T) { testPast(t, loop) })
	t.Run("events", func(t *testing.T) { testEvents(t, loop) })
	t.Run("tool results are cut", func(t *testing.T) { testCut(t, loop) })
}

// fixture is a manager whose type "subject" has the echo and loud tools,
// the given hooks and loop, played by model.
type fixture struct {
	mgr   *manager.Manager
	model *scripted.Model
}

func newFixture(t *testing.T, loop agenttypes.Loop, model *scripted.Model, hooks *agenttypes.Hooks, transcripts string) *fixture {
	t.Helper()
	reg := agenttypes.NewRegistry()
	for _, tool := range []agenttypes.Tool{echoTool, loudTool} {
		if err := reg.RegisterTool(tool); err != nil {
			t.Fatal(err)
		}
	}
	err := reg.RegisterType(agenttypes.Type{
		Name: "subject", Description: "under test", Prompt: "You are under test.",
		Tools: []string{"echo", "loud"}, Loop: loop, Hooks: hooks,
	})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := manager.New(manager.Config{
		Logger:        slog.New(slog.DiscardHandler),
		Registry:      reg,
		Models:        manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil }),
		DefaultModel:  "scripted",
		TranscriptDir: transcripts,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := mgr.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return &fixture{mgr: mgr, model: model}
}

func (f *fixture) run(t *testing.T, task string, budget agenttypes.Budget) manager.Result {
	t.Helper()
	a, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "subject", Task: task, Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := a.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

var echoTool = &agenttypes.ToolFunc{
	ToolSpec: agenttypes.ToolSpec{Name: "echo", Description: "echoes text", ReadOnly: true},
	Func: func(_ context.Context, args json.RawMessage) (string, error) {
		var in struct{ Text string }
		if err := json.Unmarshal(args, &in); err != nil {
			return "", err
		}
		return "echo:" + in.Text, nil
	},
}

// loudTool fails quoting its path, as a file tool does, or echoes.
var loudTool = &agenttypes.ToolFunc{
	ToolSpec: agenttypes.ToolSpec{Name: "loud", Description: "fails quoting its input, or echoes it", ReadOnly: true},
	Func: func(_ context.Context, args json.RawMessage) (string, error) {
		var in struct{ Path, Echo string }
		if err := json.Unmarshal(args, &in); err != nil {
			return "", err
		}
		if in.Path != "" {
			return "", errors.New("open " + in.Path + ": no such file or directory")
		}
		return in.Echo, nil
	},
}

// requestsFor are the model requests of the conversation whose task
// holds task.
func requestsFor(model *scripted.Model, task string) []scripted.Request {
	var out []scripted.Request
	for _, r := range model.Requests() {
		for _, m := range r.Messages {
			if m.Role == llms.ChatMessageTypeHuman && strings.Contains(scripted.Text(m), task) {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

func testHooks(t *testing.T, loop agenttypes.Loop) {
	var prompts, vetoes atomic.Int32
	hooks := &agenttypes.Hooks{
		Prompt: func(_ context.Context, task agenttypes.ScriptTask) (string, error) {
			prompts.Add(1)
			return task.Prompt + " (as the hook wrote it)", nil
		},
		BeforeTool: func(_ context.Context, name string, _ json.RawMessage) error {
			vetoes.Add(1)
			return errors.New("no " + name + " today")
		},
	}
	model := scripted.New(
		scripted.Step{Calls: []scripted.Call{{Name: "echo", Args: `{"text":"hi"}`}}},
		scripted.Step{Text: "done without echo"},
	)
	f := newFixture(t, loop, model, hooks, "")
	res := f.run(t, "say hi", agenttypes.Budget{})
	if res.State != manager.Completed {
		t.Fatalf("the run %s (%s): %s", res.State, res.Reason, res.Error)
	}
	if n := prompts.Load(); n != 1 {
		t.Errorf("the Prompt hook ran %d times, want once", n)
	}
	if n := vetoes.Load(); n != 1 {
		t.Errorf("BeforeTool was asked %d times about the one call, want once", n)
	}
	if res.ToolCalls != 0 {
		t.Errorf("a vetoed call was counted: %d tool calls", res.ToolCalls)
	}
	reqs := requestsFor(model, "say hi (as the hook wrote it)")
	if len(reqs) != 2 {
		t.Fatalf("%d model calls with the task the Prompt hook wrote, want 2", len(reqs))
	}
	results := scripted.ToolResults(reqs[1].Messages)
	switch {
	case len(results) != 1:
		t.Errorf("%d tool results, want 1", len(results))
	case !strings.Contains(results[0].Content, "no echo today"):
		t.Errorf("the model was told %q, not why the call was vetoed", results[0].Content)
	case strings.Contains(results[0].Content, "echo:hi"):
		t.Errorf("the vetoed tool ran: %q", results[0].Content)
	}
}

func testBudgets(t *testing.T, loop agenttypes.Loop) {
	again := scripted.Step{Text: "more", Calls: []scripted.Call{{Name: "echo", Args: `{"text":"a"}`}, {Name: "echo", Args: `{"text":"b"}`}}, InputTokens: 100, OutputTokens: 10}
	for _, tc := range []struct {
		name   string
		budget agenttypes.Budget
		reason manager.Reason
		check  func(res manager.Result) string
	}{
		{"turns", agenttypes.Budget{MaxTurns: 2}, manager.ReasonBudgetTurns, func(res manager.Result) string {
			return want(res.Turns == 2, "%d turns, want 2", res.Turns)
		}},
		{"tool calls", agenttypes.Budget{MaxToolCalls: 3}, manager.ReasonBudgetToolCalls, func(res manager.Result) string {
			return want(res.ToolCalls == 3, "%d tool calls, want 3", res.ToolCalls)
		}},
		{"tokens", agenttypes.Budget{MaxTokens: 250}, manager.ReasonBudgetTokens, func(res manager.Result) string {
			return want(res.Usage.Total() <= 250+110, "%d tokens spent, more than one call past the budget of 250", res.Usage.Total())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, loop, scripted.New(again, again, again, again), nil, "")
			res := f.run(t, "spend", tc.budget)
			if res.State != manager.Failed || res.Reason != tc.reason {
				t.Fatalf("the run %s (%s), want failed (%s): %s", res.State, res.Reason, tc.reason, res.Error)
			}
			if !errors.Is(res.Err, manager.ErrBudgetExceeded) {
				t.Errorf("the run's error %v is not ErrBudgetExceeded", res.Err)
			}
			if msg := tc.check(res); msg != "" {
				t.Error(msg)
			}
		})
	}
}

// testPast checks an answer that takes the run past its token budget: a
// final one is kept and the overshoot reported; one that asks for tools
// ends the run, and its tools are not run, since its tokens are spent.
func testPast(t *testing.T, loop agenttypes.Loop) {
	budget := agenttypes.Budget{MaxTokens: 200}
	final := scripted.Step{Text: "the answer", InputTokens: 190, OutputTokens: 20}
	f := newFixture(t, loop, scripted.New(final), nil, "")
	res := f.run(t, "answer", budget)
	if res.State != manager.Completed || res.Output != "the answer" {
		t.Fatalf("a final answer past the budget: the run %s (%s) with %q; want it completed with the answer kept", res.State, res.Reason, res.Output)
	}
	if res.TokensOverBudget != 10 {
		t.Errorf("the result says the run went %d tokens past its budget, want 10", res.TokensOverBudget)
	}

	asks := scripted.Step{Calls: []scripted.Call{{Name: "echo", Args: `{"text":"hi"}`}}, InputTokens: 190, OutputTokens: 20}
	f = newFixture(t, loop, scripted.New(asks, final), nil, "")
	res = f.run(t, "answer", budget)
	if res.State != manager.Failed || res.Reason != manager.ReasonBudgetTokens {
		t.Fatalf("an answer past the budget that asks for tools: the run %s (%s), want failed (budget_tokens): %s", res.State, res.Reason, res.Error)
	}
	if res.ToolCalls != 0 {
		t.Errorf("%d tools ran after the budget was spent, want none", res.ToolCalls)
	}
}

func want(ok bool, format string, args ...any) string {
	if ok {
		return ""
	}
	return fmt.Sprintf(format, args...)
}

// compared are the events the two steps emit and the lifecycle: what every
// kind of loop must report alike.
var compared = []manager.EventKind{
	manager.EventSpawned, manager.EventState, manager.EventModelCall, manager.EventToolCall,
	manager.EventToolResult, manager.EventCompleted,
}

func testEvents(t *testing.T, loop agenttypes.Loop) {
	model := scripted.New(
		scripted.Step{Calls: []scripted.Call{{Name: "echo", Args: `{"text":"hi"}`}}},
		scripted.Step{Text: "done"},
	)
	f := newFixture(t, loop, model, nil, t.TempDir())
	res := f.run(t, "report", agenttypes.Budget{})
	if res.State != manager.Completed {
		t.Fatalf("the run %s (%s): %s", res.State, res.Reason, res.Error)
	}
	events, err := manager.ReadTranscript(res.Transcript)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []manager.EventKind
	for _, e := range events {
		if !slices.Contains(compared, e.Kind) {
			continue
		}
		kinds = append(kinds, e.Kind)
		line, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		switch e.Kind {
		case manager.EventState:
			if e.From == e.State {
				t.Errorf("a state event that is no move: %s", line)
			}
		case manager.EventCompleted:
			if e.State != manager.Completed || e.From != manager.Running {
				t.Errorf("completed does not say it came from running: %s", line)
			}
		case manager.EventSpawned:
			if e.State != manager.Pending {
				t.Errorf("spawned is not pending: %s", line)
			}
		default:
			// No move of the lifecycle: nothing said of it, rather than
			// "pending".
			if strings.Contains(string(line), `"state"`) || strings.Contains(string(line), `"from"`) {
				t.Errorf("an event that is no move says a state: %s", line)
			}
		}
	}
	wantKinds := []manager.EventKind{
		manager.EventSpawned, manager.EventState, manager.EventModelCall, manager.EventToolCall,
		manager.EventToolResult, manager.EventModelCall, manager.EventState, manager.EventCompleted,
	}
	if !slices.Equal(kinds, wantKinds) {
		t.Errorf("events %v, want %v", kinds, wantKinds)
	}
}

func testCut(t *testing.T, loop agenttypes.Loop) {
	// A model that sends a 300 KB path gets an error that quotes it; it is
	// given a bounded part of it, not 75,000 tokens, and the same for a
	// 300 KB result.
	huge := strings.Repeat("a/", 150_000)
	model := scripted.New(
		scripted.Step{Calls: []scripted.Call{{Name: "loud", Args: scripted.JSON(map[string]string{"path": huge})}}},
		scripted.Step{Calls: []scripted.Call{{Name: "loud", Args: scripted.JSON(map[string]string{"echo": huge})}}},
		scripted.Step{Text: "done"},
	)
	f := newFixture(t, loop, model, nil, "")
	res := f.run(t, "cut", agenttypes.Budget{})
	if res.State != manager.Completed {
		t.Fatalf("the run %s (%s): %s", res.State, res.Reason, res.Error)
	}
	reqs := requestsFor(model, "cut")
	if len(reqs) != 3 {
		t.Fatalf("%d model calls, want 3", len(reqs))
	}
	results := scripted.ToolResults(reqs[2].Messages)
	if len(results) != 2 {
		t.Fatalf("%d tool results, want 2", len(results))
	}
	if n := len(results[0].Content); n > 8<<10 {
		t.Errorf("the model was given %d bytes of an error; an error is cut to a few KiB", n)
	}
	if !strings.Contains(results[0].Content, "no such file") {
		t.Error("the error's end, which says what went wrong, was cut off")
	}
	if n := len(results[1].Content); n > manager.DefaultMaxToolResult+1<<10 {
		t.Errorf("the model was given %d bytes of a result, more than the cap of %d", n, manager.DefaultMaxToolResult)
	}
	if !strings.Contains(results[1].Content, "cut") {
		t.Error("the model is not told the result was cut")
	}
}
