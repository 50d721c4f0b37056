package manager_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

// customFixture registers a type "custom" whose loop is fn, with the echo
// tool.
func customFixture(t *testing.T, model *scripted.Model, fn agenttypes.LoopFunc, mutate func(*manager.Config)) *fixture {
	t.Helper()
	f := newFixture(t, model, mutate)
	require.NoError(t, f.reg.RegisterType(agenttypes.Type{Name: "custom", Description: "brings its own loop", Tools: []string{"echo"}, Loop: fn}))
	return f
}

// askThenAct is a small custom loop: ask the model, run the tools it
// asks for, ask again, return the answer.
func askThenAct(ctx context.Context, s agenttypes.Session, task string) (string, error) {
	msgs := []agenttypes.Message{{Role: agenttypes.RoleSystem, Text: "plugin loop"}, {Role: agenttypes.RoleUser, Text: task}}
	for range 5 {
		resp, err := s.Generate(ctx, agenttypes.GenerateRequest{Messages: msgs})
		if err != nil {
			return "", err
		}
		if len(resp.ToolCalls) == 0 {
			return resp.Text, nil
		}
		msgs = append(msgs, agenttypes.Message{Role: agenttypes.RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls})
		for _, c := range resp.ToolCalls {
			text, err := s.CallTool(ctx, c)
			if err != nil {
				if errors.Is(err, agenttypes.ErrBudgetExceeded) {
					return "", err
				}
				text = "error: " + err.Error()
			}
			msgs = append(msgs, agenttypes.Message{Role: agenttypes.RoleTool, ToolCallID: c.ID, Name: c.Name, Text: text})
		}
	}
	return "", errors.New("no answer in five turns")
}

func TestCustomLoopRunsThroughTheManagersAccounting(t *testing.T) {
	model := scripted.New(
		scripted.Step{Text: "checking", Calls: []scripted.Call{{Name: "echo", Args: `{"text":"hi"}`}, {Name: "secret"}}, InputTokens: 30, OutputTokens: 5},
		scripted.Step{Text: "the loop's answer", InputTokens: 50, OutputTokens: 7},
	)
	dir := t.TempDir()
	f := customFixture(t, model, askThenAct, func(c *manager.Config) { c.TranscriptDir = dir })
	res := f.run(t, manager.SpawnRequest{Type: "custom", Task: "do it your way"})
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.Equal(t, "the loop's answer", res.Output)
	assert.Equal(t, manager.Usage{InputTokens: 80, OutputTokens: 12}, res.Usage, "the loop's model calls are counted")
	assert.Equal(t, 2, res.Turns)
	assert.Equal(t, 1, res.ToolCalls, "the refused call is not counted")

	reqs := model.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, []string{"echo"}, reqs[0].Tools, "the agent's tools are offered")
	results := scripted.ToolResults(reqs[1].Messages)
	require.Len(t, results, 2)
	assert.Equal(t, "echo:hi", results[0].Content)
	assert.Contains(t, results[1].Content, "not available to this agent")

	events, err := manager.ReadTranscript(res.Transcript)
	require.NoError(t, err)
	var kinds []manager.EventKind
	for _, e := range events {
		kinds = append(kinds, e.Kind)
	}
	assert.Equal(t, []manager.EventKind{manager.EventSpawned, manager.EventState, manager.EventModelCall, manager.EventToolCall,
		manager.EventToolResult, manager.EventToolResult, manager.EventModelCall, manager.EventState, manager.EventCompleted}, kinds)
}

func TestCustomLoopIsHeldToItsBudgets(t *testing.T) {
	calls := func(n int) []scripted.Step {
		steps := make([]scripted.Step, n)
		for i := range steps {
			steps[i] = scripted.Step{Text: fmt.Sprint("turn ", i), Calls: []scripted.Call{{Name: "echo", Args: `{"text":"x"}`}}, InputTokens: 100, OutputTokens: 20}
		}
		return steps
	}
	for name, tc := range map[string]struct {
		budget agenttypes.Budget
		reason manager.Reason
	}{
		"turns":      {agenttypes.Budget{MaxTurns: 2}, manager.ReasonBudgetTurns},
		"tool calls": {agenttypes.Budget{MaxToolCalls: 1}, manager.ReasonBudgetToolCalls},
		"tokens":     {agenttypes.Budget{MaxTokens: 300}, manager.ReasonBudgetTokens},
	} {
		t.Run(name, func(t *testing.T) {
			// A loop that ignores refusals and carries on is still stopped.
			stubborn := func(ctx context.Context, s agenttypes.Session, task string) (string, error) {
				out, _ := askThenAct(ctx, s, task)
				_, _ = s.Generate(ctx, agenttypes.GenerateRequest{Messages: []agenttypes.Message{{Role: agenttypes.RoleUser, Text: "more"}}})
				return out + " (ignored the budget)", nil
			}
			f := customFixture(t, scripted.New(calls(5)...), stubborn, nil)
			res := f.run(t, manager.SpawnRequest{Type: "custom", Task: "spend", Budget: tc.budget})
			assert.Equal(t, manager.Failed, res.State)
			assert.Equal(t, tc.reason, res.Reason)
			assert.True(t, res.Partial)
			assert.ErrorIs(t, res.Err, manager.ErrBudgetExceeded)
		})
	}
}

func TestCustomLoopFailures(t *testing.T) {
	for name, tc := range map[string]struct {
		fn     agenttypes.LoopFunc
		reason manager.Reason
		is     error
	}{
		"plugin exited": {func(context.Context, agenttypes.Session, string) (string, error) {
			return "", fmt.Errorf("plugin demo: %w (exit status 2)", agenttypes.ErrPluginExited)
		}, manager.ReasonPluginExited, manager.ErrPluginExited},
		"loop error": {func(context.Context, agenttypes.Session, string) (string, error) {
			return "", errors.New("confused")
		}, manager.ReasonLoopError, nil},
		"loop panic": {func(context.Context, agenttypes.Session, string) (string, error) {
			panic("loop exploded")
		}, manager.ReasonLoopError, nil},
	} {
		t.Run(name, func(t *testing.T) {
			f := customFixture(t, scripted.New(), tc.fn, nil)
			res := f.run(t, manager.SpawnRequest{Type: "custom", Task: "fail"})
			assert.Equal(t, manager.Failed, res.State)
			assert.Equal(t, tc.reason, res.Reason)
			if tc.is != nil {
				assert.ErrorIs(t, res.Err, tc.is)
			}
			if name == "loop panic" {
				var pe *manager.PanicError
				require.ErrorAs(t, res.Err, &pe)
				assert.Contains(t, pe.Stack, "goroutine")
			}
		})
	}
}

func TestCustomLoopIsCancelled(t *testing.T) {
	entered := make(chan struct{})
	f := customFixture(t, scripted.New(), func(ctx context.Context, s agenttypes.Session, task string) (string, error) {
		close(entered)
		<-ctx.Done()
		return "", ctx.Err()
	}, nil)
	a, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "custom", Task: "wait"})
	require.NoError(t, err)
	<-entered
	a.Cancel()
	res, err := a.Wait(context.Background())
	require.NoError(t, err)
	assert.Equal(t, manager.Cancelled, res.State)
}

// A custom loop's own context bounds the calls it makes through its
// session, as well as the run's: a plugin's loop passes its call's
// deadline, and a tool or model that waits must stop at it.
func TestCustomLoopCallsHonourTheLoopsContext(t *testing.T) {
	toolErr := make(chan error, 1)
	waiter := &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "wait", Description: "waits for its context", ReadOnly: true},
		Func: func(ctx context.Context, _ json.RawMessage) (string, error) {
			if agenttypes.EnvFrom(ctx) == nil {
				return "", errors.New("the tool lost the agent's environment")
			}
			<-ctx.Done()
			toolErr <- ctx.Err()
			return "", ctx.Err()
		},
	}
	var toolCallErr, generateErr error
	loop := agenttypes.LoopFunc(func(ctx context.Context, s agenttypes.Session, task string) (string, error) {
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_, toolCallErr = s.CallTool(short, agenttypes.ToolCall{ID: "1", Name: "wait", Args: json.RawMessage(`{}`)})
		cancel()
		short, cancel = context.WithTimeout(ctx, 50*time.Millisecond)
		_, generateErr = s.Generate(short, agenttypes.GenerateRequest{Messages: []agenttypes.Message{{Role: agenttypes.RoleUser, Text: task}}})
		cancel()
		resp, err := s.Generate(ctx, agenttypes.GenerateRequest{Messages: []agenttypes.Message{
			{Role: agenttypes.RoleUser, Text: task}, {Role: agenttypes.RoleAssistant, Text: "(timed out)"}, {Role: agenttypes.RoleUser, Text: "again"}}})
		if err != nil {
			return "", err
		}
		return resp.Text, nil
	})
	model := scripted.New(scripted.Step{Block: true}, scripted.Step{Text: "done after both"})
	f := newFixture(t, model, nil, waiter)
	require.NoError(t, f.reg.RegisterType(agenttypes.Type{Name: "custom", Description: "brings its own loop", Tools: []string{"wait"}, Loop: loop}))
	res := f.run(t, manager.SpawnRequest{Type: "custom", Task: "wait", Budget: agenttypes.Budget{MaxTime: time.Minute}})
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.Equal(t, "done after both", res.Output)
	select {
	case err := <-toolErr:
		assert.ErrorIs(t, err, context.DeadlineExceeded, "the tool's context ended at the loop's deadline")
	default:
		t.Fatal("the tool never saw its context end")
	}
	assert.ErrorIs(t, toolCallErr, context.DeadlineExceeded)
	assert.ErrorIs(t, generateErr, context.DeadlineExceeded)
	assert.Less(t, res.Duration, 30*time.Second, "neither call waited for the run's own time budget")
}
