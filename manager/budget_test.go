package manager_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/models/modelcap"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

func TestTimeBudgetHoldsWhenTheModelAnswersLate(t *testing.T) {
	// The model ignores its context and answers after the budget ran out.
	late := scripted.New(scripted.Step{Func: func(ctx context.Context, _ []llms.MessageContent) scripted.Step {
		<-ctx.Done()
		time.Sleep(20 * time.Millisecond)
		return scripted.Step{Text: "a late answer"}
	}})
	f := newFixture(t, late, nil)
	res := f.run(t, manager.SpawnRequest{Budget: agenttypes.Budget{MaxTime: 50 * time.Millisecond}})
	assert.Equal(t, manager.Failed, res.State)
	assert.Equal(t, manager.ReasonBudgetTime, res.Reason, "a run that outlived its time budget ends budget_time whatever the model did")
	assert.True(t, res.Partial)
	assert.Equal(t, "a late answer", res.Output, "the late answer is kept as the partial output")
	assert.ErrorIs(t, res.Err, context.DeadlineExceeded)
}

func TestRefusedToolCallsCostNoBudget(t *testing.T) {
	model := scripted.New(
		scripted.Step{Calls: []scripted.Call{{Name: "nonexistent"}, {Name: "echo", Args: `{"text":"hi"}`}}},
		scripted.Step{Text: "done"},
	)
	f := newFixture(t, model, nil)
	res := f.run(t, manager.SpawnRequest{Budget: agenttypes.Budget{MaxToolCalls: 1}})
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.Equal(t, 1, res.ToolCalls)
	results := scripted.ToolResults(model.Requests()[1].Messages)
	require.Len(t, results, 2)
	assert.Contains(t, results[0].Content, "not available to this agent")
	assert.Equal(t, "echo:hi", results[1].Content, "the allowed call ran within the budget")
}

func TestToolCallsPastTheBudgetAreNotRun(t *testing.T) {
	model := scripted.New(
		scripted.Step{Text: "three at once", Calls: []scripted.Call{{Name: "echo", Args: `{"text":"a"}`}, {Name: "nope"}, {Name: "echo", Args: `{"text":"b"}`}, {Name: "echo", Args: `{"text":"c"}`}}},
	)
	f := newFixture(t, model, nil)
	res := f.run(t, manager.SpawnRequest{Budget: agenttypes.Budget{MaxToolCalls: 2}})
	assert.Equal(t, manager.ReasonBudgetToolCalls, res.Reason)
	assert.Equal(t, 2, res.ToolCalls, "the two calls the budget allows ran; the refusal cost nothing")
}

func TestFinalAnswerOverTheTokenBudgetIsKept(t *testing.T) {
	model := scripted.New(scripted.Step{Text: `{"findings": ["a.go:3"]}`, InputTokens: 900, OutputTokens: 300})
	f := newFixture(t, model, nil)
	require.NoError(t, f.reg.RegisterType(agenttypes.Type{
		Name: "finder", Description: "finds", Output: agenttypes.Output{Format: agenttypes.OutputJSON},
	}))
	sub := f.mgr.Subscribe()
	res := f.run(t, manager.SpawnRequest{Type: "finder", Budget: agenttypes.Budget{MaxTokens: 1000}})
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.Equal(t, manager.ReasonDone, res.Reason)
	assert.False(t, res.Partial)
	assert.Equal(t, map[string]any{"findings": []any{"a.go:3"}}, res.Data, "the structured answer is not thrown away")
	assert.Equal(t, 200, res.TokensOverBudget)
	require.NoError(t, f.mgr.Close(context.Background()))
	var exceeded []manager.Event
	for e := range sub.C() {
		if e.Kind == manager.EventBudgetExceeded {
			exceeded = append(exceeded, e)
		}
	}
	require.Len(t, exceeded, 1, "an event says the budget was passed")
	assert.Contains(t, exceeded[0].Text, "200 tokens past its token budget of 1000")
}

func TestToolCallsOverTheTokenBudgetEndTheRun(t *testing.T) {
	// The provider's count comes back above the budget after the call:
	// the tool calls it asked for are not run.
	model := scripted.New(
		scripted.Step{Text: "first", Calls: []scripted.Call{{Name: "echo", Args: `{"text":"x"}`}}, InputTokens: 900, OutputTokens: 300},
		scripted.Step{Text: "never reached"},
	)
	f := newFixture(t, model, nil)
	res := f.run(t, manager.SpawnRequest{Budget: agenttypes.Budget{MaxTokens: 1000}})
	assert.Equal(t, manager.Failed, res.State)
	assert.Equal(t, manager.ReasonBudgetTokens, res.Reason)
	assert.Equal(t, 0, res.ToolCalls, "no tool runs on tokens the run did not have")
	assert.Equal(t, 1200, res.Usage.Total(), "the overshoot is one call's provider count")
	assert.Len(t, model.Requests(), 1)
}

// countingModel is a scripted model that counts one token per character,
// as a provider tokenizer might count differently from the estimate.
type countingModel struct{ *scripted.Model }

func (countingModel) CountTokens(s string) int { return len(s) }

func TestTokenEstimateCountsToolDefinitions(t *testing.T) {
	big := &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "big", Description: strings.Repeat("a long description ", 200)},
		Func:     func(context.Context, json.RawMessage) (string, error) { return "", nil },
	}
	specChars := len(big.Description)
	for name, tc := range map[string]struct {
		model   llms.Model
		tokens  int // what the tool definitions take at least
		budget  int
		counted bool
	}{
		"estimate":      {tokens: specChars / 4, budget: 5000},
		"model counter": {tokens: specChars, budget: 20000, counted: true},
	} {
		t.Run(name, func(t *testing.T) {
			model := scripted.New(scripted.Step{Text: "ok"})
			var m llms.Model = model
			if tc.counted {
				m = countingModel{model}
			}
			reg := agenttypes.NewRegistry()
			require.NoError(t, reg.RegisterTool(big))
			require.NoError(t, reg.RegisterType(agenttypes.Type{Name: "w", Description: "d", Prompt: "p", Tools: []string{"big"}}))
			mgr, err := manager.New(manager.Config{Registry: reg, DefaultModel: "m",
				Models: manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return m, nil })})
			require.NoError(t, err)
			defer mgr.Close(context.Background())
			a, err := mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "w", Task: "t", Budget: agenttypes.Budget{MaxTokens: tc.budget}})
			require.NoError(t, err)
			_, err = a.Wait(context.Background())
			require.NoError(t, err)
			reqs := model.Requests()
			require.Len(t, reqs, 1)
			assert.LessOrEqual(t, reqs[0].MaxTokens, tc.budget-tc.tokens, "the cap on the call leaves room for the tool definitions sent with it")
		})
	}
}

func TestOverTheBudgetOnlyByOneCallsEstimateError(t *testing.T) {
	// The provider counts each call at 300 tokens; the budget allows three
	// and a bit. The fourth call is refused before it is made.
	steps := make([]scripted.Step, 10)
	for i := range steps {
		steps[i] = scripted.Step{Text: fmt.Sprint("step ", i), Calls: []scripted.Call{{Name: "echo", Args: `{"text":"x"}`}}, InputTokens: 250, OutputTokens: 50}
	}
	model := scripted.New(steps...)
	f := newFixture(t, model, nil)
	res := f.run(t, manager.SpawnRequest{Budget: agenttypes.Budget{MaxTokens: 1000}})
	assert.Equal(t, manager.ReasonBudgetTokens, res.Reason)
	assert.LessOrEqual(t, res.Usage.Total(), 1000+300, "never past the budget by more than one call")
}

// greedyModel answers as its script says, but reports one input token
// (below any estimate) and, for an answer, as many output tokens as the
// call allowed (uncapped, when the call set no cap): a model that writes
// until its cap. It pauses, when told to, so that siblings' calls overlap.
// Priced, it costs $1 per million input and $10 per million output tokens,
// and says so. Whatever a budget is passed by is then the manager's doing.
type greedyModel struct {
	script   *scripted.Model
	pause    time.Duration
	uncapped int
	priced   bool
}

func (g greedyModel) Cost(in, out int) (float64, bool) {
	return (float64(in) + 10*float64(out)) / 1e6, g.priced
}

var _ modelcap.Pricer = greedyModel{}

func (g greedyModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	var opts llms.CallOptions
	for _, o := range options {
		o(&opts)
	}
	resp, err := g.script.GenerateContent(ctx, msgs, options...)
	if err != nil {
		return nil, err
	}
	select {
	case <-time.After(g.pause):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	out := opts.MaxTokens
	if out == 0 {
		out = g.uncapped
	}
	if len(resp.Choices[0].ToolCalls) > 0 {
		out = 10 // asking for tools is short
	}
	info := map[string]any{"PromptTokens": 1, "CompletionTokens": out}
	if g.priced {
		info["CostUSD"], _ = g.Cost(1, out)
	}
	resp.Choices[0].GenerationInfo = info
	return resp, nil
}

func (g greedyModel) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, g, prompt, options...)
}

func TestSiblingsCallingAtOnceShareTheirParentsTokens(t *testing.T) {
	// Two children call the model at the same moment under a parent with
	// 2,000 tokens. Each call may write all the tree has left, so the
	// second must be held to what the first leaves, not given the same.
	script := byTask(map[string][]scripted.Step{
		"parent": {{Calls: []scripted.Call{{Name: "child", Args: `{"task":"c1"}`}, {Name: "child", Args: `{"task":"c2"}`}}}, {Text: "parent done"}},
		"c1":     {{Text: "one"}},
		"c2":     {{Text: "two"}},
	})
	var mgr *manager.Manager
	greedy := greedyModel{script: script, pause: 20 * time.Millisecond}
	f := newFixture(t, script, func(c *manager.Config) {
		c.MaxConcurrent = 4
		c.Models = manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return greedy, nil })
	}, spawnChildTool(&mgr))
	mgr = f.mgr
	res := f.run(t, manager.SpawnRequest{Task: "parent", Budget: agenttypes.Budget{MaxTokens: 2000}})
	var caps []int
	for _, r := range script.Requests() {
		caps = append(caps, r.MaxTokens)
	}
	assert.LessOrEqual(t, res.Usage.Total(), 2000, "the tree spent %d of a 2,000-token budget with calls capped at %v", res.Usage.Total(), caps)
}

func TestSiblingsRunningAtOnceShareTheirParentsToolCalls(t *testing.T) {
	// The parent may make 4 tool calls: two go on its children, who then
	// each ask for 2 at the same moment. Only 2 of their 4 may run.
	var started atomic.Int32
	slow := &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "slow", Description: "takes a moment"},
		Func: func(ctx context.Context, _ json.RawMessage) (string, error) {
			started.Add(1)
			time.Sleep(20 * time.Millisecond)
			return "ok", nil
		},
	}
	var both sync.WaitGroup
	both.Add(2)
	meet := scripted.Step{Func: func(context.Context, []llms.MessageContent) scripted.Step {
		// Both children ask for their tools at once.
		both.Done()
		both.Wait()
		return scripted.Step{Calls: []scripted.Call{{Name: "slow"}, {Name: "slow"}}}
	}}
	model := byTask(map[string][]scripted.Step{
		"parent": {{Calls: []scripted.Call{{Name: "child", Args: `{"task":"c1"}`}, {Name: "child", Args: `{"task":"c2"}`}}}, {Text: "parent done"}},
		"c1":     {meet, {Text: "one"}},
		"c2":     {meet, {Text: "two"}},
	})
	var mgr *manager.Manager
	f := newFixture(t, model, func(c *manager.Config) { c.MaxConcurrent = 4 }, spawnChildTool(&mgr), slow)
	mgr = f.mgr
	f.run(t, manager.SpawnRequest{Task: "parent", Budget: agenttypes.Budget{MaxToolCalls: 4}})
	assert.Equal(t, int32(2), started.Load(), "the children ran %d tool calls where their parent had 2 left", started.Load())
}

func TestChildrenOfATokenBudgetCallTheirModelAtOnce(t *testing.T) {
	// Three children, spawned as one group by a parent with a token
	// budget, each call the model and wait there for the others. Holding
	// all that is left for the first call would make the others wait for
	// it; each gets a share instead, and the parent keeps one.
	var arrived atomic.Int32
	all := make(chan struct{})
	var met atomic.Int32
	meet := scripted.Step{Func: func(ctx context.Context, _ []llms.MessageContent) scripted.Step {
		if arrived.Add(1) == 3 {
			close(all)
		}
		select {
		case <-all:
			met.Add(1)
		case <-time.After(5 * time.Second):
		case <-ctx.Done():
		}
		return scripted.Step{Text: "done"}
	}}
	model := byTask(map[string][]scripted.Step{
		"parent": {{Calls: []scripted.Call{{Name: "children"}}}, {Text: "parent done"}},
		"c1":     {meet},
		"c2":     {meet},
		"c3":     {meet},
	})
	var mgr *manager.Manager
	children := &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "children", Description: "runs three children at once"},
		Func: func(ctx context.Context, _ json.RawMessage) (string, error) {
			var tasks []agenttypes.ChildTask
			for _, p := range []string{"c1", "c2", "c3"} {
				tasks = append(tasks, agenttypes.ChildTask{Label: p, Type: "worker", Prompt: p})
			}
			g, err := mgr.SpawnGroup(ctx, manager.GroupRequest{ParentID: agenttypes.EnvFrom(ctx).AgentID, Tasks: tasks, Concurrency: 3})
			if err != nil {
				return "", err
			}
			_, err = g.Wait(ctx)
			return "ok", err
		},
	}
	f := newFixture(t, model, func(c *manager.Config) { c.MaxConcurrent = 4 }, children)
	mgr = f.mgr
	res := f.run(t, manager.SpawnRequest{Task: "parent", Budget: agenttypes.Budget{MaxTokens: 40000}})
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.Equal(t, int32(3), met.Load(), "the children's model calls ran one at a time")
	reqs := model.Requests()
	require.Len(t, reqs, 5)
	for _, r := range reqs[1:4] {
		assert.Greater(t, r.MaxTokens, 40000/5, "a child's share of the tokens left is fair, not what its siblings left over")
		assert.Less(t, r.MaxTokens, 40000/3, "the parent keeps a share to read its children's reports")
	}
}

// limitedModel is a scripted model that says how much output one call to
// it asks for at most.
type limitedModel struct {
	*scripted.Model
	limit int
}

func (l limitedModel) OutputLimit() int { return l.limit }

var _ modelcap.OutputLimiter = limitedModel{}

func TestACallUnderABudgetAsksForNoMoreThanTheModelsLimit(t *testing.T) {
	// The call holds the model's limit of the budget, not all of it, so
	// the rest stays free for the tree's other calls.
	script := scripted.New(scripted.Step{Text: "done"})
	model := limitedModel{Model: script, limit: 300}
	f := newFixture(t, script, func(c *manager.Config) {
		c.Models = manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil })
	})
	res := f.run(t, manager.SpawnRequest{Task: "go", Budget: agenttypes.Budget{MaxTokens: 10000}})
	require.Equal(t, manager.Completed, res.State, res.Error)
	require.Len(t, script.Requests(), 1)
	assert.Equal(t, 300, script.Requests()[0].MaxTokens)
}

func TestAChildsAnswerOverItsParentsBudgetIsKeptAndReported(t *testing.T) {
	// Two children answer at once, each within its own budget; together
	// they take their parent past its 3,000 tokens. The second answer is
	// kept, and its result and an event say whose budget it passed.
	var both sync.WaitGroup
	both.Add(2)
	answer := scripted.Step{Func: func(context.Context, []llms.MessageContent) scripted.Step {
		both.Done()
		both.Wait()
		return scripted.Step{Text: "report", InputTokens: 1000, OutputTokens: 500}
	}}
	model := byTask(map[string][]scripted.Step{
		"parent": {{Calls: []scripted.Call{{Name: "child", Args: `{"task":"c1"}`}, {Name: "child", Args: `{"task":"c2"}`}}}, {Text: "parent done"}},
		"c1":     {answer},
		"c2":     {answer},
	})
	var mgr *manager.Manager
	f := newFixture(t, model, func(c *manager.Config) { c.MaxConcurrent = 4 }, spawnChildTool(&mgr))
	mgr = f.mgr
	sub := f.mgr.Subscribe()
	f.run(t, manager.SpawnRequest{Task: "parent", Budget: agenttypes.Budget{MaxTokens: 3000}})
	require.NoError(t, f.mgr.Close(context.Background()))
	var exceeded []manager.Event
	for e := range sub.C() {
		if e.Kind == manager.EventBudgetExceeded {
			exceeded = append(exceeded, e)
		}
	}
	require.Len(t, exceeded, 1, "the answer that took the parent past its budget is reported")
	assert.Contains(t, exceeded[0].Text, "past the token budget (its parent's) of 3000")
	res, err := f.mgr.Wait(context.Background(), exceeded[0].AgentID)
	require.NoError(t, err)
	assert.Equal(t, manager.Completed, res.State)
	assert.Equal(t, "report", res.Output)
	assert.Positive(t, res.TokensOverBudget)
}

func TestACostBudgetCapsEachCallLikeATokenBudget(t *testing.T) {
	// $0.01 buys about 1,000 output tokens. Uncapped, the one answer
	// would cost $0.05; the call is capped to what the budget has left.
	script := scripted.New(scripted.Step{Text: "a long answer"})
	model := greedyModel{script: script, uncapped: 5000, priced: true}
	f := newFixture(t, script, func(c *manager.Config) {
		c.Models = manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil })
	})
	res := f.run(t, manager.SpawnRequest{Task: "go", Budget: agenttypes.Budget{MaxCostUSD: 0.01}})
	require.Equal(t, manager.Completed, res.State, res.Error)
	require.Len(t, script.Requests(), 1)
	assert.Positive(t, script.Requests()[0].MaxTokens, "the call is capped")
	assert.LessOrEqual(t, res.Usage.CostUSD, 0.01, "spent $%.4f of $0.01", res.Usage.CostUSD)
}

func TestSiblingsShareTheirParentsCostBudget(t *testing.T) {
	// Two children answer at once under a parent with $0.02: each may
	// write only its share, so together they stay within it.
	var both sync.WaitGroup
	both.Add(2)
	meet := scripted.Step{Func: func(context.Context, []llms.MessageContent) scripted.Step {
		both.Done()
		both.Wait()
		return scripted.Step{Text: "report"}
	}}
	script := byTask(map[string][]scripted.Step{
		"parent": {{Calls: []scripted.Call{{Name: "child", Args: `{"task":"c1"}`}, {Name: "child", Args: `{"task":"c2"}`}}}, {Text: "parent done"}},
		"c1":     {meet},
		"c2":     {meet},
	})
	model := greedyModel{script: script, uncapped: 5000, priced: true}
	var mgr *manager.Manager
	f := newFixture(t, script, func(c *manager.Config) {
		c.MaxConcurrent = 4
		c.Models = manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil })
	}, spawnChildTool(&mgr))
	mgr = f.mgr
	res := f.run(t, manager.SpawnRequest{Task: "parent", Budget: agenttypes.Budget{MaxCostUSD: 0.02}})
	assert.LessOrEqual(t, res.Usage.CostUSD, 0.02, "the tree spent $%.4f of $0.02", res.Usage.CostUSD)
}
