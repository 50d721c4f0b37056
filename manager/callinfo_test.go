package manager_test

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/models/modelcap"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

// callInfos records what each model call was told on its context.
type callInfos struct {
	mu    sync.Mutex
	infos []modelcap.CallInfo
	told  []bool
}

// step is a scripted step that records the call's CallInfo and then
// plays s.
func (c *callInfos) step(s scripted.Step) scripted.Step {
	return scripted.Step{Func: func(ctx context.Context, _ []llms.MessageContent) scripted.Step {
		info, ok := modelcap.CallFrom(ctx)
		c.mu.Lock()
		c.infos = append(c.infos, info)
		c.told = append(c.told, ok)
		c.mu.Unlock()
		return s
	}}
}

func (c *callInfos) got(t *testing.T) []modelcap.CallInfo {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, ok := range c.told {
		if !ok {
			t.Errorf("model call %d was told nothing on its context", i+1)
		}
	}
	return append([]modelcap.CallInfo(nil), c.infos...)
}

func echoCalls(n int) []scripted.Call {
	calls := make([]scripted.Call, n)
	for i := range calls {
		calls[i] = scripted.Call{Name: "echo", Args: `{"text":"` + strconv.Itoa(i) + `"}`}
	}
	return calls
}

// TestTheModelIsToldTheTurnsAndToolCallsLeft: every model call, of the
// manager's loop and of a type's own, is told on its context how many
// turns (this one included) and tool calls the budgets leave, so that a
// model can fit its plan to them.
func TestTheModelIsToldTheTurnsAndToolCallsLeft(t *testing.T) {
	var rec callInfos
	model := scripted.New(
		rec.step(scripted.Step{Calls: echoCalls(2)}),
		rec.step(scripted.Step{Calls: echoCalls(1)}),
		rec.step(scripted.Step{Text: "done"}),
	)
	f := newFixture(t, model, nil)
	res := f.run(t, manager.SpawnRequest{Budget: agenttypes.Budget{MaxTurns: 4, MaxToolCalls: 5}})
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.Equal(t, []modelcap.CallInfo{
		{Task: "do it", Turns: 4, ToolCalls: 5},
		{Task: "do it", Turns: 3, ToolCalls: 3},
		{Task: "do it", Turns: 2, ToolCalls: 2},
	}, rec.got(t))

	t.Run("no limits", func(t *testing.T) {
		var rec callInfos
		f := newFixture(t, scripted.New(rec.step(scripted.Step{Text: "done"})), nil)
		res := f.run(t, manager.SpawnRequest{})
		require.Equal(t, manager.Completed, res.State, res.Error)
		assert.Equal(t, []modelcap.CallInfo{{Task: "do it", Turns: modelcap.Unlimited, ToolCalls: modelcap.Unlimited}}, rec.got(t))
	})

	t.Run("a type's own loop", func(t *testing.T) {
		var rec callInfos
		model := scripted.New(rec.step(scripted.Step{Calls: echoCalls(1)}), rec.step(scripted.Step{Text: "done"}))
		f := customFixture(t, model, askThenAct, nil)
		res := f.run(t, manager.SpawnRequest{Type: "custom", Budget: agenttypes.Budget{MaxTurns: 3, MaxToolCalls: 2}})
		require.Equal(t, manager.Completed, res.State, res.Error)
		assert.Equal(t, []modelcap.CallInfo{
			{Turns: 3, ToolCalls: 2},
			{Turns: 2, ToolCalls: 1},
		}, rec.got(t), "a type's own loop writes its own messages: no task is named for them")
	})
}

// TestTheModelIsToldTheTaskAsGivenBeforeThePromptHook: the last human
// message is the task as the type's Prompt hook wrote it, and the call
// says which part of it is the task the caller gave.
func TestTheModelIsToldTheTaskAsGivenBeforeThePromptHook(t *testing.T) {
	var rec callInfos
	model := scripted.New(rec.step(scripted.Step{Text: "done"}))
	f := newFixture(t, model, nil)
	require.NoError(t, f.reg.RegisterType(agenttypes.Type{
		Name: "hooked", Description: "has a Prompt hook", Tools: []string{"echo"},
		Hooks: &agenttypes.Hooks{Prompt: func(_ context.Context, task agenttypes.ScriptTask) (string, error) {
			return "Mind the house style.\n\n" + task.Prompt + "\n\nAnswer in French.", nil
		}},
	}))
	res := f.run(t, manager.SpawnRequest{Type: "hooked", Task: "where is the discount applied?"})
	require.Equal(t, manager.Completed, res.State, res.Error)
	reqs := model.Requests()
	require.Len(t, reqs, 1)
	msgs := reqs[0].Messages
	assert.Equal(t, "Mind the house style.\n\nwhere is the discount applied?\n\nAnswer in French.", scripted.Text(msgs[len(msgs)-1]))
	require.Len(t, rec.got(t), 1)
	assert.Equal(t, "where is the discount applied?", rec.got(t)[0].Task)
}

// toolBlind is a model that is charged nothing for tool definitions.
type toolBlind struct{ *scripted.Model }

func (toolBlind) CountToolTokens([]llms.Tool) int { return 0 }

var allowRe = regexp.MustCompile(`allow at least (\d+) tokens`)

// TestATokenBudgetTooSmallForOneCallSaysWhatWould: a budget that cannot
// pay for the first call's input is not "used up": the refusal says so
// and names a budget that pays for the call, and that budget does.
func TestATokenBudgetTooSmallForOneCallSaysWhatWould(t *testing.T) {
	model := scripted.New(scripted.Step{Text: "done"})
	f := newFixture(t, model, nil)
	res := f.run(t, manager.SpawnRequest{Budget: agenttypes.Budget{MaxTokens: 30}})
	assert.Equal(t, manager.ReasonBudgetTokens, res.Reason)
	require.ErrorIs(t, res.Err, manager.ErrBudgetExceeded)
	assert.Contains(t, res.Error, "token budget of 30 is too small for one model call")
	assert.Contains(t, res.Error, "of them the tool definitions")
	assert.NotContains(t, res.Error, "used up")
	assert.Empty(t, model.Requests(), "the model was not called")
	m := allowRe.FindStringSubmatch(res.Error)
	require.NotNil(t, m, res.Error)
	enough, _ := strconv.Atoi(m[1])

	res = f.run(t, manager.SpawnRequest{Budget: agenttypes.Budget{MaxTokens: enough - 1}})
	assert.Equal(t, manager.ReasonBudgetTokens, res.Reason, "one token less is refused")
	assert.Empty(t, model.Requests())
	res = f.run(t, manager.SpawnRequest{Budget: agenttypes.Budget{MaxTokens: enough}})
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.Len(t, model.Requests(), 1, "the budget named pays for the call")
}

// TestAModelChargedNothingForToolDefinitionsIsNotRefusedForThem: a
// model that counts its tool definitions itself (the offline model,
// which reads none) has them counted its way when the manager holds
// tokens for a call.
func TestAModelChargedNothingForToolDefinitionsIsNotRefusedForThem(t *testing.T) {
	run := func(m llms.Model, budget int) manager.Result {
		f := newFixture(t, scripted.New(), func(c *manager.Config) {
			c.Models = manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return m, nil })
		})
		return f.run(t, manager.SpawnRequest{Budget: agenttypes.Budget{MaxTokens: budget}})
	}
	res := run(scripted.New(), 30)
	m := allowRe.FindStringSubmatch(res.Error)
	require.NotNil(t, m, res.Error)
	enough, _ := strconv.Atoi(m[1])
	res = run(scripted.New(scripted.Step{Text: "done"}), enough-1)
	require.Equal(t, manager.ReasonBudgetTokens, res.Reason, "with its tool definitions the call does not fit in %d tokens", enough-1)

	blind := toolBlind{scripted.New(scripted.Step{Text: "done"})}
	res = run(blind, enough-1)
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.False(t, errors.Is(res.Err, manager.ErrBudgetExceeded))
	reqs := blind.Requests()
	require.Len(t, reqs, 1)
	assert.Greater(t, reqs[0].MaxTokens, 64, "the tokens held for the call are what the messages alone leave")
}
