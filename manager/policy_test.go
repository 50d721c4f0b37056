package manager_test

import (
	"context"
	"encoding/json"
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

// The rules every kind of loop is held to are checked by
// TestEveryLoopKindKeepsTheRules; these are the defects of the one path
// that only some callers can show.

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
	f := newFixture(t, model, nil, signal)
	require.NoError(t, f.reg.RegisterType(agenttypes.Type{Name: "subject", Description: "under test", Tools: []string{"signal"}, Loop: loop}))
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
