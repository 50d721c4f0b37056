package manager_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

// treeTools are minimal delegate, collect and ask_parent tools over
// agenttypes.Tree, as the builtin ones are, with JSON in and out.
func treeTools() []agenttypes.Tool {
	jsonOut := func(v any, err error) (string, error) {
		if err != nil {
			return "", err
		}
		b, err := json.Marshal(v)
		return string(b), err
	}
	return []agenttypes.Tool{
		&agenttypes.ToolFunc{
			ToolSpec: agenttypes.ToolSpec{Name: "delegate", Description: "hands tasks to subagents"},
			Func: func(ctx context.Context, args json.RawMessage) (string, error) {
				var req agenttypes.DelegateRequest
				if err := json.Unmarshal(args, &req); err != nil {
					return "", err
				}
				return jsonOut(agenttypes.EnvFrom(ctx).Tree.Delegate(ctx, req))
			},
		},
		&agenttypes.ToolFunc{
			ToolSpec: agenttypes.ToolSpec{Name: "collect", Description: "collects a background group"},
			Func: func(ctx context.Context, args json.RawMessage) (string, error) {
				var req agenttypes.CollectRequest
				if err := json.Unmarshal(args, &req); err != nil {
					return "", err
				}
				return jsonOut(agenttypes.EnvFrom(ctx).Tree.Collect(ctx, req))
			},
		},
		&agenttypes.ToolFunc{
			ToolSpec: agenttypes.ToolSpec{Name: "ask_parent", Description: "asks the parent"},
			Func: func(ctx context.Context, args json.RawMessage) (string, error) {
				var q agenttypes.Question
				if err := json.Unmarshal(args, &q); err != nil {
					return "", err
				}
				ans, err := agenttypes.EnvFrom(ctx).Tree.AskParent(ctx, q)
				if err != nil {
					return "", err
				}
				if ans.Text == "" {
					return "no answer", nil
				}
				return "answer from " + ans.By + ": " + ans.Text, nil
			},
		},
	}
}

// treeFixture is a manager with the tree tools, a "lead" type that may
// delegate and a "worker" type (echo, note, secret) for children, all
// played by one scripted model that answers each conversation by its
// task.
type treeFixture struct {
	*fixture
	model *scripted.Model
}

func newTreeFixture(t *testing.T, script map[string][]scripted.Step, mutate func(*manager.Config), extra ...agenttypes.Tool) *treeFixture {
	t.Helper()
	model := byTask(script)
	note := &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "note", Description: "notes"},
		Func: func(ctx context.Context, args json.RawMessage) (string, error) {
			var in struct{ Text string }
			_ = json.Unmarshal(args, &in)
			agenttypes.EnvFrom(ctx).Note(in.Text)
			return "noted", nil
		},
	}
	tools := append(treeTools(), note)
	f := newFixture(t, model, mutate, append(tools, extra...)...)
	require.NoError(t, f.reg.RegisterType(agenttypes.Type{
		Name: "lead", Description: "delegates", Prompt: "You lead.",
		Tools: []string{"delegate", "collect", "echo", "note", "secret"},
	}))
	return &treeFixture{fixture: f, model: model}
}

// delegateCall is a scripted delegate tool call.
func delegateCall(req agenttypes.DelegateRequest) scripted.Step {
	return scripted.Step{Calls: []scripted.Call{{Name: "delegate", Args: scripted.JSON(req)}}}
}

// requestsFor returns the model requests of the conversation whose task
// ends with suffix.
func requestsFor(model *scripted.Model, suffix string) []scripted.Request {
	var out []scripted.Request
	for _, r := range model.Requests() {
		if len(r.Messages) > 1 && strings.HasSuffix(scripted.Text(r.Messages[1]), suffix) {
			out = append(out, r)
		}
	}
	return out
}

func lastToolResult(t *testing.T, model *scripted.Model, suffix string) string {
	t.Helper()
	reqs := requestsFor(model, suffix)
	require.NotEmpty(t, reqs)
	results := scripted.ToolResults(reqs[len(reqs)-1].Messages)
	require.NotEmpty(t, results)
	return results[len(results)-1].Content
}

func TestDelegateThreeChildrenEndToEnd(t *testing.T) {
	busy := []scripted.Step{}
	for range 6 {
		busy = append(busy, scripted.Step{Text: "still looking", Calls: []scripted.Call{
			{Name: "note", Args: `{"text":"checked a.go"}`}, {Name: "echo", Args: `{"text":"x"}`},
		}, InputTokens: 10, OutputTokens: 5})
	}
	script := map[string][]scripted.Step{
		"coordinate": {
			delegateCall(agenttypes.DelegateRequest{Concurrency: 2, Tasks: []agenttypes.ChildTask{
				{Label: "busy", Type: "worker", Prompt: "look everywhere", Budget: agenttypes.Budget{MaxToolCalls: 3}},
				{Label: "stuck", Type: "worker", Prompt: "wait forever"},
				{Label: "quick", Type: "worker", Prompt: "answer now"},
			}}),
			{Text: "merged the three reports"},
		},
		"look everywhere": busy,
		"wait forever":    {{Block: true}},
		"answer now":      {{Text: "the answer is 42", InputTokens: 100, OutputTokens: 20}},
	}
	dir := t.TempDir()
	tf := newTreeFixture(t, script, func(c *manager.Config) { c.TranscriptDir = dir; c.MaxConcurrent = 3 })
	// Cancel the stuck child as soon as it runs.
	sub := tf.mgr.Subscribe()
	go func() {
		for e := range sub.C() {
			if e.Kind == manager.EventState && e.State == manager.Running && e.Label == "stuck" {
				_ = tf.mgr.Cancel(e.AgentID)
			}
		}
	}()
	res := tf.run(t, manager.SpawnRequest{Type: "lead", Task: "coordinate"})
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.Equal(t, "merged the three reports", res.Output)

	var resp agenttypes.DelegateResponse
	require.NoError(t, json.Unmarshal([]byte(lastToolResult(t, tf.model, "coordinate")), &resp))
	require.Len(t, resp.Results, 3)
	byLabel := map[string]agenttypes.ChildResult{}
	for i, want := range []string{"busy", "stuck", "quick"} {
		assert.Equal(t, want, resp.Results[i].Label, "results in input order")
		byLabel[want] = resp.Results[i]
	}
	assert.Equal(t, agenttypes.ChildPartial, byLabel["busy"].Status)
	assert.Equal(t, "budget_tool_calls", byLabel["busy"].Reason)
	assert.Contains(t, byLabel["busy"].Report, "checked a.go", "a partial child carries its notes")
	assert.Equal(t, agenttypes.ChildCancelled, byLabel["stuck"].Status)
	assert.Equal(t, agenttypes.ChildOK, byLabel["quick"].Status)
	assert.Equal(t, "the answer is 42", byLabel["quick"].Report)
	assert.Equal(t, 120, byLabel["quick"].Usage.Total())

	children := 0
	for _, r := range resp.Results {
		children += r.Usage.Total()
	}
	assert.Equal(t, res.OwnUsage.Total()+children, res.Usage.Total(), "the parent's usage includes its children's")
	assert.Greater(t, res.Usage.Total(), res.OwnUsage.Total())

	for _, r := range resp.Results {
		events := agentEvents(t, res.Transcript, r.ID)
		require.NotEmpty(t, events, "the run's transcript holds the children's events")
		assert.Equal(t, res.ID, events[0].ParentID, "a child's transcript names its parent")
		assert.Equal(t, resp.Group, events[0].Group, "and its group")
		assert.Equal(t, r.Label, events[0].Label)
	}
}

func TestGroupConcurrencyHoldsChildrenBack(t *testing.T) {
	var mu sync.Mutex
	running, most := 0, 0
	step := scripted.Step{Func: func(context.Context, []llms.MessageContent) scripted.Step {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		running--
		mu.Unlock()
		return scripted.Step{Text: "done"}
	}}
	tasks := []agenttypes.ChildTask{}
	script := map[string][]scripted.Step{}
	for i := range 5 {
		p := fmt.Sprint("job ", i)
		tasks = append(tasks, agenttypes.ChildTask{Label: p, Type: "worker", Prompt: p})
		script[p] = []scripted.Step{step}
	}
	script["fan out"] = []scripted.Step{delegateCall(agenttypes.DelegateRequest{Concurrency: 2, Tasks: tasks}), {Text: "ok"}}
	tf := newTreeFixture(t, script, func(c *manager.Config) { c.MaxConcurrent = 8 })
	res := tf.run(t, manager.SpawnRequest{Type: "lead", Task: "fan out"})
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.Equal(t, 2, most, "a request's concurrency bounds how many of its children run at once")
}

func TestChildBudgetsAreClampedAndChargedToTheParent(t *testing.T) {
	script := map[string][]scripted.Step{
		"plan": {
			{Text: "thinking", Calls: []scripted.Call{{Name: "echo", Args: `{"text":"x"}`}}, InputTokens: 500, OutputTokens: 100},
			delegateCall(agenttypes.DelegateRequest{Tasks: []agenttypes.ChildTask{
				{Label: "hungry", Type: "worker", Prompt: "spend a lot", Budget: agenttypes.Budget{MaxTokens: 100_000, MaxToolCalls: 50}},
			}}),
			{Text: "never reached"},
		},
		"spend a lot": {
			{Text: "a", Calls: []scripted.Call{{Name: "echo", Args: `{"text":"1"}`}}, InputTokens: 150, OutputTokens: 50},
			{Text: "b", Calls: []scripted.Call{{Name: "echo", Args: `{"text":"2"}`}}, InputTokens: 150, OutputTokens: 50},
			{Text: "c", Calls: []scripted.Call{{Name: "echo", Args: `{"text":"3"}`}}, InputTokens: 150, OutputTokens: 50},
		},
	}
	tf := newTreeFixture(t, script, nil)
	res := tf.run(t, manager.SpawnRequest{Type: "lead", Task: "plan", Budget: agenttypes.Budget{MaxTokens: 1000, MaxToolCalls: 3}})

	child := tf.mgr.List(manager.Filter{ParentID: res.ID})
	require.Len(t, child, 1)
	assert.LessOrEqual(t, child[0].Budget.MaxTokens, 400, "the child gets no more tokens than its parent had left")
	assert.Equal(t, 1, child[0].Budget.MaxToolCalls, "nor more tool calls (3 less the parent's 2: echo and delegate)")
	assert.LessOrEqual(t, res.Usage.Total(), 1000+200, "the parent's budget bounds its whole subtree, past it by one call at most")
	assert.Equal(t, manager.Failed, res.State, "the parent has nothing left after its child")
	assert.Equal(t, manager.ReasonBudgetTokens, res.Reason)
}

func TestFanOutAndDepthLimitsAreToolErrors(t *testing.T) {
	three := delegateCall(agenttypes.DelegateRequest{Tasks: []agenttypes.ChildTask{
		{Label: "a", Type: "worker", Prompt: "p1"}, {Label: "b", Type: "worker", Prompt: "p2"}, {Label: "c", Type: "worker", Prompt: "p3"},
	}})
	for name, tc := range map[string]struct {
		mutate func(*manager.Config)
		want   string
	}{
		"children per parent": {func(c *manager.Config) { c.MaxChildren = 2 }, "MaxChildren"},
		"agents in the tree":  {func(c *manager.Config) { c.MaxTreeAgents = 3 }, "MaxTreeAgents"},
		"approval refused": {func(c *manager.Config) {
			c.ApproveDelegation = func(_ context.Context, ap manager.Approval) error {
				if !strings.HasPrefix(ap.Summary, "Spawn 3 subagents: [a] p1; [b] p2; [c] p3") {
					return fmt.Errorf("unexpected summary %q", ap.Summary)
				}
				return errors.New("the user said no")
			}
		}, "not approved: the user said no"},
	} {
		t.Run(name, func(t *testing.T) {
			tf := newTreeFixture(t, map[string][]scripted.Step{"go": {three, {Text: "gave up"}}, "p1": {{Text: "x"}}, "p2": {{Text: "x"}}, "p3": {{Text: "x"}}}, tc.mutate)
			res := tf.run(t, manager.SpawnRequest{Type: "lead", Task: "go"})
			require.Equal(t, manager.Completed, res.State)
			result := lastToolResult(t, tf.model, "go")
			assert.Contains(t, result, "delegation refused")
			assert.Contains(t, result, tc.want)
			assert.Empty(t, tf.mgr.List(manager.Filter{ParentID: res.ID}), "a refused request spawns nothing")
		})
	}
}

func TestChildrenAtTheDepthLimitAreNotOfferedDelegate(t *testing.T) {
	script := map[string][]scripted.Step{
		"top":    {delegateCall(agenttypes.DelegateRequest{Tasks: []agenttypes.ChildTask{{Label: "mid", Type: "lead", Prompt: "middle"}}}), {Text: "top done"}},
		"middle": {{Text: "middle done"}},
	}
	tf := newTreeFixture(t, script, nil) // MaxDepth 1
	res := tf.run(t, manager.SpawnRequest{Type: "lead", Task: "top"})
	require.Equal(t, manager.Completed, res.State, res.Error)
	mid := requestsFor(tf.model, "middle")
	require.Len(t, mid, 1)
	assert.NotContains(t, mid[0].Tools, "delegate", "a child at the depth limit is not offered delegate")
	assert.NotContains(t, mid[0].Tools, "collect")
	assert.Contains(t, mid[0].Tools, "ask_parent", "every child may ask its parent")
	assert.Contains(t, requestsFor(tf.model, "top")[0].Tools, "delegate")
	assert.NotContains(t, requestsFor(tf.model, "top")[0].Tools, "ask_parent", "a top-level agent has no parent to ask")
}

func TestAToolTheParentLacksDoesNotReachTheChild(t *testing.T) {
	var wiped bool
	wipe := &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "wipe", Description: "destroys"},
		Func:     func(context.Context, json.RawMessage) (string, error) { wiped = true; return "wiped", nil },
	}
	script := map[string][]scripted.Step{
		"careful": {delegateCall(agenttypes.DelegateRequest{Tasks: []agenttypes.ChildTask{{Label: "w", Type: "wiper", Prompt: "wipe it"}}}), {Text: "done"}},
		"wipe it": {{Calls: []scripted.Call{{Name: "wipe"}}}, {Text: "tried"}},
	}
	tf := newTreeFixture(t, script, nil, wipe)
	require.NoError(t, tf.reg.RegisterType(agenttypes.Type{Name: "wiper", Description: "wipes", Tools: []string{"wipe", "echo"}}))
	res := tf.run(t, manager.SpawnRequest{Type: "lead", Task: "careful"}) // lead has no wipe
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.False(t, wiped, "a child never gets a tool its parent does not have")
	child := requestsFor(tf.model, "wipe it")
	require.NotEmpty(t, child)
	assert.NotContains(t, child[0].Tools, "wipe")

	// Narrowing only narrows: secret is registered but not a lead's tool.
	_, err := tf.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "wiper", Task: "t", Tools: []string{"secret"}})
	require.ErrorIs(t, err, manager.ErrBadRequest)
	assert.Contains(t, err.Error(), "never adds")
}

func TestARefusedRequestSpendsNoneOfTheParentsChildren(t *testing.T) {
	twoGoodOneBad := delegateCall(agenttypes.DelegateRequest{Tasks: []agenttypes.ChildTask{
		{Label: "a", Type: "worker", Prompt: "p1"}, {Label: "b", Type: "worker", Prompt: "p2"}, {Label: "c", Type: "nosuchtype", Prompt: "p3"},
	}})
	twoGood := delegateCall(agenttypes.DelegateRequest{Tasks: []agenttypes.ChildTask{
		{Label: "a", Type: "worker", Prompt: "p1"}, {Label: "b", Type: "worker", Prompt: "p2"},
	}})
	script := map[string][]scripted.Step{"go": {twoGoodOneBad, twoGood, {Text: "done"}}, "p1": {{Text: "x"}}, "p2": {{Text: "y"}}}
	tf := newTreeFixture(t, script, func(c *manager.Config) { c.MaxChildren = 2 })
	res := tf.run(t, manager.SpawnRequest{Type: "lead", Task: "go"})
	require.Equal(t, manager.Completed, res.State, res.Error)
	resp := delegateResponse(t, tf, "go")
	require.Len(t, resp.Results, 2, "the refused request left room for two children")
}
