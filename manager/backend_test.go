package manager_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

// fakeBackend runs an agent by calling run, with the RemoteRun it got.
type fakeBackend struct {
	runs chan manager.RemoteRun
	run  func(ctx context.Context, r manager.RemoteRun) (manager.RemoteOutcome, error)
}

func (b *fakeBackend) Run(ctx context.Context, r manager.RemoteRun) (manager.RemoteOutcome, error) {
	b.runs <- r
	return b.run(ctx, r)
}

func newBackendFixture(t *testing.T, run func(context.Context, manager.RemoteRun) (manager.RemoteOutcome, error)) (*fixture, *fakeBackend) {
	t.Helper()
	b := &fakeBackend{runs: make(chan manager.RemoteRun, 4), run: run}
	f := newFixture(t, scripted.New(), func(c *manager.Config) {
		c.Backend, c.Models = b, nil
		c.MaxDepth = 2
	})
	return f, b
}

func TestBackendRunsTopLevelAgentsAndRelaysTheirTreesEvents(t *testing.T) {
	f, b := newBackendFixture(t, func(_ context.Context, r manager.RemoteRun) (manager.RemoteOutcome, error) {
		r.Publish(manager.Event{Kind: manager.EventModelCall, Turn: 1, Text: "delegating"})
		r.Publish(manager.Event{Kind: manager.EventSpawned, AgentID: "child-1", ParentID: r.ID, Type: "worker", Depth: 1, State: manager.Pending})
		r.Publish(manager.Event{Kind: manager.EventCompleted, AgentID: "child-1", ParentID: r.ID, Type: "worker", Depth: 1, State: manager.Completed})
		// The agent's own lifecycle is the manager's: this one is dropped.
		r.Publish(manager.Event{Kind: manager.EventCompleted, AgentID: r.ID, State: manager.Completed})
		return manager.RemoteOutcome{State: manager.Completed, Reason: manager.ReasonDone, Output: "done there", Model: "provider:resolved",
			Usage: manager.Usage{InputTokens: 30, OutputTokens: 7}, OwnUsage: manager.Usage{InputTokens: 10, OutputTokens: 2}, ToolCalls: 1, Turns: 2}, nil
	})
	sub := f.mgr.Subscribe()
	defer sub.Close()
	res := f.run(t, manager.SpawnRequest{Task: "go", Budget: agenttypes.Budget{MaxTurns: 3}})
	got := <-b.runs
	assert.Equal(t, res.ID, got.ID)
	assert.Equal(t, "scripted", got.Model, "the run names the model the manager chose; the backend resolves it")
	assert.Equal(t, 3, got.Budget.MaxTurns)
	assert.Equal(t, 2, got.MaxDepth)

	require.Equal(t, manager.Completed, res.State)
	assert.Equal(t, "done there", res.Output)
	assert.Equal(t, "provider:resolved", res.Model, "the result names the model the backend ran it with")
	assert.Equal(t, manager.Usage{InputTokens: 30, OutputTokens: 7}, res.Usage)
	assert.Equal(t, manager.Usage{InputTokens: 10, OutputTokens: 2}, res.OwnUsage)
	assert.Equal(t, 1, res.ToolCalls)
	assert.Equal(t, 2, res.Turns)

	var seen []string
	for e := range sub.C() {
		seen = append(seen, string(e.Kind)+"/"+e.AgentID)
		if e.Kind == manager.EventCompleted && e.AgentID == res.ID {
			break
		}
	}
	root := res.ID
	assert.Equal(t, []string{"spawned/" + root, "state/" + root, "model_call/" + root, "spawned/child-1", "completed/child-1",
		"state/" + root, "completed/" + root}, seen)
}

func TestBackendOutcomesKeepTheirErrorClasses(t *testing.T) {
	f, _ := newBackendFixture(t, func(context.Context, manager.RemoteRun) (manager.RemoteOutcome, error) {
		return manager.RemoteOutcome{State: manager.Failed, Reason: manager.ReasonBudgetTurns, Error: "budget exceeded: turn budget of 1 used up", Partial: true}, nil
	})
	res := f.run(t, manager.SpawnRequest{Task: "go"})
	assert.Equal(t, manager.ReasonBudgetTurns, res.Reason)
	assert.ErrorIs(t, res.Err, manager.ErrBudgetExceeded)
	assert.Equal(t, "budget exceeded: turn budget of 1 used up", res.Error)
}

func TestBackendFailureFailsTheAgent(t *testing.T) {
	f, _ := newBackendFixture(t, func(context.Context, manager.RemoteRun) (manager.RemoteOutcome, error) {
		return manager.RemoteOutcome{}, errors.New("cluster unreachable")
	})
	res := f.run(t, manager.SpawnRequest{Task: "go"})
	assert.Equal(t, manager.Failed, res.State)
	assert.Equal(t, manager.ReasonBackend, res.Reason)
	assert.ErrorIs(t, res.Err, manager.ErrBackend)
	assert.Contains(t, res.Error, "cluster unreachable")
}

func TestBackendCancelReachesTheRun(t *testing.T) {
	f, b := newBackendFixture(t, func(ctx context.Context, _ manager.RemoteRun) (manager.RemoteOutcome, error) {
		<-ctx.Done()
		return manager.RemoteOutcome{State: manager.Cancelled, Reason: manager.ReasonCancelled, Error: "agent cancelled"}, nil
	})
	a, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "go"})
	require.NoError(t, err)
	<-b.runs
	a.Cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := a.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, manager.Cancelled, res.State)
	assert.ErrorIs(t, res.Err, context.Canceled)
}

func TestBackendKeepsTheTreeThere(t *testing.T) {
	release := make(chan struct{})
	f, b := newBackendFixture(t, func(context.Context, manager.RemoteRun) (manager.RemoteOutcome, error) {
		<-release
		return manager.RemoteOutcome{State: manager.Completed, Reason: manager.ReasonDone}, nil
	})
	defer close(release)
	a, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "go"})
	require.NoError(t, err)
	<-b.runs
	_, err = f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "help", ParentID: a.ID()})
	assert.ErrorIs(t, err, manager.ErrDelegation, "a child of a remote agent is spawned there, by its delegate tool")
	_, err = f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "again", Resume: a.ID()})
	assert.ErrorIs(t, err, manager.ErrBadRequest)
}

// TestStepsRunAnAgentAsTheLoopDoes drives a run one step at a time, as a
// durable backend does, and checks it ends as the manager's own loop
// ends the same run: a tool call, an answer that is not JSON sent back,
// then the answer.
func TestStepsRunAnAgentAsTheLoopDoes(t *testing.T) {
	steps := func() *scripted.Model {
		return scripted.New(
			scripted.Step{Text: "looking", InputTokens: 40, OutputTokens: 5, Calls: []scripted.Call{{Name: "echo", Args: `{"text":"a"}`}, {Name: "nope", Args: `{}`}}},
			scripted.Step{Text: "not json", InputTokens: 60, OutputTokens: 4},
			scripted.Step{Text: `{"answer": 42}`, InputTokens: 80, OutputTokens: 6},
		)
	}
	jsonType := func(f *fixture) {
		require.NoError(t, f.reg.RegisterType(agenttypes.Type{Name: "json", Description: "answers in JSON", Prompt: "Answer in JSON.",
			Tools: []string{"echo"}, Output: agenttypes.Output{Format: agenttypes.OutputJSON}}))
	}
	in := newFixture(t, steps(), nil)
	jsonType(in)
	want := in.run(t, manager.SpawnRequest{Type: "json", Task: "find it", Budget: agenttypes.Budget{MaxToolCalls: 5}})
	require.Equal(t, manager.Completed, want.State, want.Error)

	f := newFixture(t, steps(), nil)
	jsonType(f)
	ctx := context.Background()
	sa := manager.StepAgent{ID: "a1", Type: "json", Task: "find it", Dir: t.TempDir(), Budget: agenttypes.Budget{MaxToolCalls: 5}}
	st, err := f.mgr.StartStep(ctx, sa)
	require.NoError(t, err)
	require.Nil(t, st.End)
	sa.Model = st.Model
	msgs := st.Messages
	var end *manager.StepEnd
	for end == nil {
		ms, err := f.mgr.GenerateStep(ctx, sa, msgs)
		require.NoError(t, err)
		require.Nil(t, ms.End)
		sa.Spent.Usage, sa.Spent.Turns = sa.Spent.Usage.Add(ms.Usage), ms.Turn
		if len(ms.Choice.ToolCalls) > 0 {
			ts, err := f.mgr.ToolsStep(ctx, sa, ms.Choice)
			require.NoError(t, err)
			require.Empty(t, ts.Tree)
			sa.Spent.ToolCalls += ts.Counted
			msgs, end = append(msgs, ts.Messages...), ts.End
			continue
		}
		as, err := f.mgr.AnswerStep(ctx, sa, ms)
		require.NoError(t, err)
		sa.Retried = true
		msgs, end = append(msgs, as.Retry...), as.End
	}
	assert.Equal(t, want.State, end.State)
	assert.Equal(t, want.Output, end.Output)
	assert.Equal(t, want.Data, end.Data)
	assert.Equal(t, want.Usage, sa.Spent.Usage)
	assert.Equal(t, want.ToolCalls, sa.Spent.ToolCalls, "a refused call is not counted")
	assert.Equal(t, want.Turns, sa.Spent.Turns)
	reqs := f.model.Requests()
	wantReqs := in.model.Requests()
	require.Len(t, reqs, len(wantReqs))
	for i := range reqs {
		assert.Equal(t, messagesText(wantReqs[i].Messages), messagesText(reqs[i].Messages), "request %d", i)
	}
}

func messagesText(msgs []llms.MessageContent) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Role) + ": " + scripted.Text(m)
		for _, r := range scripted.ToolResults([]llms.MessageContent{m}) {
			out[i] += " [" + r.Name + "] " + r.Content
		}
	}
	return out
}

// TestStepsTakeNoRunningSlot runs more tool steps than the manager has
// running slots, then an agent of its own: a step's transient agent
// neither holds a slot nor takes one when its tool calls end.
func TestStepsTakeNoRunningSlot(t *testing.T) {
	model := scripted.New(scripted.Step{Text: "done"})
	f := newFixture(t, model, func(c *manager.Config) { c.MaxConcurrent = 1 })
	ctx := context.Background()
	sa := manager.StepAgent{ID: "s", Type: "worker", Task: "t", Model: "scripted", Dir: t.TempDir()}
	call := &llms.ContentChoice{ToolCalls: []llms.ToolCall{{ID: "c", Type: "function", FunctionCall: &llms.FunctionCall{Name: "echo", Arguments: `{"text":"x"}`}}}}
	for range 3 {
		ts, err := f.mgr.ToolsStep(ctx, sa, call)
		require.NoError(t, err)
		require.Nil(t, ts.End)
	}
	res := f.run(t, manager.SpawnRequest{Task: "go"})
	assert.Equal(t, manager.Completed, res.State)
	assert.Equal(t, 0, f.mgr.Stats().Running)
}

func TestStartStepRefusesWhatStepsCannotRun(t *testing.T) {
	f := newFixture(t, scripted.New(), nil)
	require.NoError(t, f.reg.RegisterType(agenttypes.Type{Name: "own", Description: "own loop", Prompt: "x",
		Loop: agenttypes.LoopFunc(func(context.Context, agenttypes.Session, string) (string, error) { return "", nil })}))
	require.NoError(t, f.reg.RegisterType(agenttypes.Type{Name: "heir", Description: "inherits", Prompt: "x", InheritContext: true}))
	ctx := context.Background()
	_, err := f.mgr.StartStep(ctx, manager.StepAgent{ID: "a", Type: "own", Task: "t", Dir: t.TempDir()})
	assert.ErrorIs(t, err, manager.ErrBadRequest)
	assert.ErrorContains(t, err, "loop of its own")
	_, err = f.mgr.StartStep(ctx, manager.StepAgent{ID: "b", Type: "heir", Task: "t", Dir: t.TempDir(), Ancestors: []manager.StepAncestor{{Type: "worker"}}})
	assert.ErrorIs(t, err, manager.ErrBadRequest)
	assert.ErrorContains(t, err, "inherits its parent's conversation")
}

func TestBackendRunsEndAsShutdownWhenTheManagerCloses(t *testing.T) {
	b := &fakeBackend{runs: make(chan manager.RemoteRun, 1), run: func(ctx context.Context, _ manager.RemoteRun) (manager.RemoteOutcome, error) {
		<-ctx.Done()
		return manager.RemoteOutcome{State: manager.Cancelled, Reason: manager.ReasonCancelled, Error: "agent cancelled"}, nil
	}}
	reg := agenttypes.NewRegistry()
	require.NoError(t, reg.RegisterType(agenttypes.Type{Name: "worker", Description: "works", Prompt: "x"}))
	m, err := manager.New(manager.Config{Registry: reg, Backend: b})
	require.NoError(t, err)
	a, err := m.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "go"})
	require.NoError(t, err)
	<-b.runs
	require.NoError(t, m.Close(context.Background()))
	res, err := a.Wait(context.Background())
	require.NoError(t, err)
	assert.Equal(t, manager.Cancelled, res.State)
	assert.Equal(t, manager.ReasonShutdown, res.Reason)
}
