package manager_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
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

func TestEveryLoopKindRunsTheTypesHooks(t *testing.T) {
	for kind, loop := range loopKinds {
		t.Run(kind, func(t *testing.T) {
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
			f := kindFixture(t, loop, model, hooks, nil)
			res := f.run(t, manager.SpawnRequest{Type: "subject", Task: "say hi"})
			require.Equal(t, manager.Completed, res.State, res.Error)
			assert.EqualValues(t, 1, prompts.Load(), "the Prompt hook runs once")
			assert.EqualValues(t, 1, vetoes.Load(), "BeforeTool is asked about the call")
			assert.Zero(t, res.ToolCalls, "a vetoed call is neither run nor counted")
			reqs := model.Requests()
			require.Len(t, reqs, 2)
			assert.Contains(t, scripted.Text(reqs[0].Messages[1]), "say hi (as the hook wrote it)", "the model gets the task the hook wrote")
			results := scripted.ToolResults(reqs[1].Messages)
			require.Len(t, results, 1)
			assert.Contains(t, results[0].Content, "no echo today", "the model is told why")
			assert.NotContains(t, results[0].Content, "echo:hi", "the vetoed tool did not run")
		})
	}
}

func TestEveryLoopKindKeepsTheBudgets(t *testing.T) {
	again := scripted.Step{Text: "more", Calls: []scripted.Call{{Name: "echo", Args: `{"text":"a"}`}, {Name: "echo", Args: `{"text":"b"}`}}, InputTokens: 100, OutputTokens: 10}
	for kind, loop := range loopKinds {
		t.Run(kind, func(t *testing.T) {
			for name, tc := range map[string]struct {
				budget agenttypes.Budget
				reason manager.Reason
				check  func(t *testing.T, res manager.Result)
			}{
				"turns": {budget: agenttypes.Budget{MaxTurns: 2}, reason: manager.ReasonBudgetTurns, check: func(t *testing.T, res manager.Result) {
					assert.Equal(t, 2, res.Turns)
				}},
				"tool calls": {budget: agenttypes.Budget{MaxToolCalls: 3}, reason: manager.ReasonBudgetToolCalls, check: func(t *testing.T, res manager.Result) {
					assert.Equal(t, 3, res.ToolCalls)
				}},
				"tokens": {budget: agenttypes.Budget{MaxTokens: 250}, reason: manager.ReasonBudgetTokens, check: func(t *testing.T, res manager.Result) {
					assert.LessOrEqual(t, res.Usage.Total(), 250+110, "at most one call's worth past the budget")
				}},
			} {
				t.Run(name, func(t *testing.T) {
					model := scripted.New(again, again, again, again)
					f := kindFixture(t, loop, model, nil, nil)
					res := f.run(t, manager.SpawnRequest{Type: "subject", Budget: tc.budget})
					require.Equal(t, manager.Failed, res.State, res.Error)
					assert.Equal(t, tc.reason, res.Reason, res.Error)
					assert.ErrorIs(t, res.Err, manager.ErrBudgetExceeded)
					tc.check(t, res)
				})
			}
		})
	}
}

func TestEveryLoopKindCapsWhatAToolGivesTheModel(t *testing.T) {
	// A model that sends a 300 KB path gets an error that quotes it; the
	// model is given a bounded part of it, not 75,000 tokens.
	loud := &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "loud", Description: "fails quoting its input, or echoes it"},
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
	huge := strings.Repeat("a/", 150_000)
	for kind, loop := range loopKinds {
		t.Run(kind, func(t *testing.T) {
			model := scripted.New(
				scripted.Step{Calls: []scripted.Call{{Name: "loud", Args: scripted.JSON(map[string]string{"path": huge})}}},
				scripted.Step{Calls: []scripted.Call{{Name: "loud", Args: scripted.JSON(map[string]string{"echo": huge})}}},
				scripted.Step{Text: "done"},
			)
			f := kindFixture(t, loop, model, nil, nil, loud)
			res := f.run(t, manager.SpawnRequest{Type: "subject"})
			require.Equal(t, manager.Completed, res.State, res.Error)
			reqs := model.Requests()
			require.Len(t, reqs, 3)
			results := scripted.ToolResults(reqs[2].Messages)
			require.Len(t, results, 2)
			assert.Less(t, len(results[0].Content), 8<<10, "an error is cut to a few KiB")
			assert.True(t, strings.Contains(results[0].Content, "no such file"), "the error's end says what went wrong")
			assert.Less(t, len(results[1].Content), manager.DefaultMaxToolResult+1<<10, "a result is cut to the cap")
			assert.True(t, strings.Contains(results[1].Content, "cut"), "the model is told the result was cut")
		})
	}
}

func TestACustomLoopsToolCallIsNotHeldBehindItsModelCall(t *testing.T) {
	// The loop asks the model and, while that call is in flight, calls a
	// tool; the model answers only once the tool has run. Neither may wait
	// for the other to finish.
	ran, asked := make(chan struct{}), make(chan struct{})
	model := scripted.New(scripted.Step{Func: func(ctx context.Context, _ []llms.MessageContent) scripted.Step {
		close(asked)
		select {
		case <-ran:
			return scripted.Step{Text: "the tool ran meanwhile"}
		case <-ctx.Done():
			return scripted.Step{Err: ctx.Err()}
		}
	}})
	signal := &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "signal", Description: "says it ran"},
		Func: func(context.Context, json.RawMessage) (string, error) {
			close(ran)
			return "signalled", nil
		},
	}
	loop := agenttypes.LoopFunc(func(ctx context.Context, s agenttypes.Session, task string) (string, error) {
		type answer struct {
			resp *agenttypes.GenerateResponse
			err  error
		}
		got := make(chan answer, 1)
		go func() {
			resp, err := s.Generate(ctx, agenttypes.GenerateRequest{Messages: []agenttypes.Message{{Role: agenttypes.RoleUser, Text: task}}})
			got <- answer{resp, err}
		}()
		<-asked // the model call is in flight
		if _, err := s.CallTool(ctx, agenttypes.ToolCall{ID: "1", Name: "signal"}); err != nil {
			return "", err
		}
		a := <-got
		if a.err != nil {
			return "", a.err
		}
		return a.resp.Text, nil
	})
	f := kindFixture(t, loop, model, nil, nil, signal)
	res := f.run(t, manager.SpawnRequest{Type: "subject", Budget: agenttypes.Budget{MaxTime: 5 * time.Second}})
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.Equal(t, "the tool ran meanwhile", res.Output)
}

func TestAParentsTurnBudgetBoundsItsAnswersToItsChildren(t *testing.T) {
	// The lead has one turn, which it spends delegating; its child's
	// question cannot buy it a second one.
	ask := scripted.Step{Calls: []scripted.Call{{Name: "ask_parent", Args: `{"question":"which one?"}`}}}
	done := scripted.Step{Func: func(_ context.Context, msgs []llms.MessageContent) scripted.Step {
		return scripted.Step{Text: "went ahead after: " + scripted.ToolResults(msgs)[0].Content}
	}}
	script := map[string][]scripted.Step{
		"lead it":                     {delegateCall(agenttypes.DelegateRequest{Tasks: []agenttypes.ChildTask{{Label: "q", Type: "worker", Prompt: "ask"}}}), {Text: "ok"}},
		"ask":                         {ask, done},
		"Your conversation so far...": {{Text: "the first one"}},
	}
	tf := newTreeFixture(t, script, nil)
	res := tf.run(t, manager.SpawnRequest{Type: "lead", Task: "lead it", Budget: agenttypes.Budget{MaxTurns: 1}})
	assert.Equal(t, 1, res.Turns, "the lead made one model call in all")
	assert.Empty(t, requestsFor(tf.model, "asks:\nwhich one?"), "the lead's model was not asked past its turn budget")
	assert.Equal(t, manager.ReasonBudgetTurns, res.Reason, res.Error)
}

func TestAParentsTurnBudgetBoundsItsSummaryForAChild(t *testing.T) {
	// A child whose type inherits context is told of its parent's
	// conversation: a summary by the parent's model, when the parent has a
	// turn for it, a digest otherwise.
	script := map[string][]scripted.Step{
		"lead it": {
			delegateCall(agenttypes.DelegateRequest{Tasks: []agenttypes.ChildTask{{Label: "h", Type: "heir", Prompt: "inherit"}}}),
			{Text: "ok"},
		},
		"inherit...":                  {{Text: "inherited"}},
		"Your conversation so far...": {{Text: "SUMMARY"}},
	}
	tf := newTreeFixture(t, script, nil)
	worker, err := tf.reg.Type("worker")
	require.NoError(t, err)
	heir := *worker
	heir.Name, heir.InheritContext = "heir", true
	require.NoError(t, tf.reg.RegisterType(heir))
	res := tf.run(t, manager.SpawnRequest{Type: "lead", Task: "lead it", Budget: agenttypes.Budget{MaxTurns: 1}})
	assert.Equal(t, 1, res.Turns, "the lead made one model call in all")
	for _, r := range tf.model.Requests() {
		assert.False(t, strings.HasPrefix(scripted.Text(r.Messages[1]), "Your conversation so far"), "no summary call past the lead's turn budget")
	}
}

func TestWhatCancelledChildrenSpentInFlightIsCharged(t *testing.T) {
	// Two children are in the middle of a model call when their parent is
	// cancelled. A provider bills the input it was sent: the parent's
	// usage holds it, marked as estimated.
	var inFlight atomic.Int32
	started := make(chan struct{})
	block := scripted.Step{Func: func(ctx context.Context, _ []llms.MessageContent) scripted.Step {
		if inFlight.Add(1) == 2 {
			close(started)
		}
		<-ctx.Done()
		return scripted.Step{Err: ctx.Err()}
	}}
	script := map[string][]scripted.Step{
		"lead it": {delegateCall(agenttypes.DelegateRequest{Tasks: []agenttypes.ChildTask{
			{Label: "a", Type: "worker", Prompt: "work a " + strings.Repeat("context ", 200)},
			{Label: "b", Type: "worker", Prompt: "work b " + strings.Repeat("context ", 200)},
		}}), {Text: "ok"}},
		"work a...": {block},
		"work b...": {block},
	}
	tf := newTreeFixture(t, script, func(c *manager.Config) { c.MaxConcurrent = 4 })
	lead, err := tf.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "lead", Task: "lead it"})
	require.NoError(t, err)
	<-started
	lead.Cancel()
	res, err := lead.Wait(context.Background())
	require.NoError(t, err)
	require.Equal(t, manager.Cancelled, res.State)
	// Each child's call carried its system prompt and its 1,600-byte task:
	// at least 400 tokens each by the manager's own estimate.
	assert.GreaterOrEqual(t, res.Usage.InputTokens-res.OwnUsage.InputTokens, 800, "the children's calls in flight are charged to the parent")
	assert.True(t, res.Usage.Estimated, "the parent's usage says part of it is an estimate")
}

func TestAParentsResultIsFinalOnlyWhenItsSubtreeHasEnded(t *testing.T) {
	// The lead is cancelled while its child's model call, which ignores
	// its context, is in flight. The lead ends after waiting for the
	// child a while; the call then returns, and its tokens are spent.
	// The lead's recorded result must hold them once the child has ended.
	release, inFlight := make(chan struct{}), make(chan struct{})
	stubborn := scripted.Step{Func: func(context.Context, []llms.MessageContent) scripted.Step {
		close(inFlight)
		<-release
		return scripted.Step{Text: "late", InputTokens: 400, OutputTokens: 100}
	}}
	script := map[string][]scripted.Step{
		"lead it":  {delegateCall(agenttypes.DelegateRequest{Tasks: []agenttypes.ChildTask{{Label: "s", Type: "worker", Prompt: "stubborn"}}}), {Text: "ok"}},
		"stubborn": {stubborn},
	}
	tf := newTreeFixture(t, script, nil)
	sub := tf.mgr.Subscribe()
	defer sub.Close()
	lead, err := tf.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "lead", Task: "lead it"})
	require.NoError(t, err)
	<-inFlight
	lead.Cancel()
	first, err := lead.Wait(context.Background())
	require.NoError(t, err)
	assert.Less(t, first.Usage.Total(), 500, "the child's call had not returned when the lead ended")
	close(release)

	deadline := time.After(10 * time.Second)
	for settled := false; !settled; {
		select {
		case e := <-sub.C():
			settled = e.AgentID == lead.ID() && e.Kind == "settled"
		case <-deadline:
			t.Fatal("the lead's result was never brought up to date")
		}
	}
	final, err := tf.mgr.Wait(context.Background(), lead.ID())
	require.NoError(t, err)
	assert.Equal(t, first.Usage.Total()+500, final.Usage.Total(), "the child's late call is in the lead's recorded usage")
	assert.True(t, first.Unsettled, "the first result said it was not final")
	assert.False(t, final.Unsettled)
}
