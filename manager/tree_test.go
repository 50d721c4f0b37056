package manager_test

import (
	"context"
	"encoding/json"
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

// byTask answers each conversation by its task: the task's step list,
// played by turn.
func byTask(script map[string][]scripted.Step) *scripted.Model {
	steps := make([]scripted.Step, 8)
	for turn := range steps {
		steps[turn] = scripted.Step{Func: func(ctx context.Context, msgs []llms.MessageContent) scripted.Step {
			text := scripted.Text(msgs[1])
			s, ok := script[text]
			if !ok {
				// A key ending in "..." matches the tasks it begins.
				for k, v := range script {
					if p, cut := strings.CutSuffix(k, "..."); cut && strings.HasPrefix(text, p) {
						s = v
					}
				}
			}
			if turn < len(s) {
				if s[turn].Func != nil {
					return s[turn].Func(ctx, msgs)
				}
				return s[turn]
			}
			return scripted.Step{Text: "no more script"}
		}}
	}
	return scripted.New(steps...)
}

// spawnChildTool spawns a child of the calling agent with the task it is
// given and waits for it with the tool's own context, as a delegating
// tool does.
func spawnChildTool(mgr **manager.Manager) *agenttypes.ToolFunc {
	return &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "child", Description: "runs a child agent"},
		Func: func(ctx context.Context, args json.RawMessage) (string, error) {
			in := struct{ Task, Type string }{Type: "worker"}
			if err := json.Unmarshal(args, &in); err != nil {
				return "", err
			}
			child, err := (*mgr).Spawn(ctx, manager.SpawnRequest{Type: in.Type, Task: in.Task, ParentID: agenttypes.EnvFrom(ctx).AgentID})
			if err != nil {
				return "", err
			}
			res, err := child.Wait(ctx)
			if err != nil {
				return "", err
			}
			return res.Output, nil
		},
	}
}

func TestSlotIsFreeBeforeOnCompleteCallbacksRun(t *testing.T) {
	model := byTask(map[string][]scripted.Step{"first": {{Text: "one"}}, "follow-up": {{Text: "two"}}})
	f := newFixture(t, model, func(c *manager.Config) { c.MaxConcurrent = 1 })
	followUp := make(chan manager.Result, 1)
	var once sync.Once
	f.mgr.OnComplete(func(i manager.Info) {
		once.Do(func() {
			// With one slot, the follow-up can run only if the agent that
			// just ended has given its slot back.
			a, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "follow-up"})
			if err != nil {
				followUp <- manager.Result{Error: err.Error()}
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			res, err := a.Wait(ctx)
			if err != nil {
				res = manager.Result{State: a.Info().State, Error: "still " + a.Info().State.String() + " after 5s"}
			}
			followUp <- res
		})
	})
	f.run(t, manager.SpawnRequest{Task: "first"})
	res := <-followUp
	assert.Equal(t, manager.Completed, res.State, "the follow-up ran: %s", res.Error)
	assert.Equal(t, "two", res.Output)
}

func TestParentWaitingOnItsChildLendsItsSlot(t *testing.T) {
	var mgr *manager.Manager
	model := byTask(map[string][]scripted.Step{
		"parent":  {{Calls: []scripted.Call{{Name: "child", Args: `{"task":"child"}`}}}, {Text: "parent done"}},
		"child":   {{Text: "child done"}},
		"unknown": {{Text: "other done"}},
	})
	f := newFixture(t, model, func(c *manager.Config) { c.MaxConcurrent = 1 }, spawnChildTool(&mgr))
	mgr = f.mgr
	res := f.run(t, manager.SpawnRequest{Task: "parent", Budget: agenttypes.Budget{MaxTime: 5 * time.Second}})
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.Equal(t, "parent done", res.Output)
	results := scripted.ToolResults(model.Requests()[len(model.Requests())-1].Messages)
	require.Len(t, results, 1)
	assert.Equal(t, "child done", results[0].Content, "the child ran while its parent waited")
	assert.Equal(t, 2, f.mgr.Stats().Completed)
}

func TestResumingParentGoesBeforePendingAgents(t *testing.T) {
	var mgr *manager.Manager
	var order []string
	var mu sync.Mutex
	note := func(s string) scripted.Step {
		return scripted.Step{Func: func(context.Context, []llms.MessageContent) scripted.Step {
			mu.Lock()
			order = append(order, s)
			mu.Unlock()
			return scripted.Step{Text: s}
		}}
	}
	childStarted := make(chan struct{})
	release := make(chan struct{})
	model := byTask(map[string][]scripted.Step{
		"parent": {{Calls: []scripted.Call{{Name: "child", Args: `{"task":"child"}`}}}, note("parent resumed")},
		"child": {{Func: func(context.Context, []llms.MessageContent) scripted.Step {
			close(childStarted)
			<-release
			return scripted.Step{Text: "child done"}
		}}},
		"other": {note("other ran")},
	})
	f := newFixture(t, model, func(c *manager.Config) { c.MaxConcurrent = 1 }, spawnChildTool(&mgr))
	mgr = f.mgr
	parent, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "parent"})
	require.NoError(t, err)
	<-childStarted
	other, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "other"})
	require.NoError(t, err)
	close(release)
	_, err = f.mgr.WaitAll(context.Background(), parent.ID(), other.ID())
	require.NoError(t, err)
	assert.Equal(t, []string{"parent resumed", "other ran"}, order, "a parent coming back from a wait takes the slot before a pending agent")
}

func TestCancellingAParentEndsItsWholeSubtree(t *testing.T) {
	f := newFixture(t, scripted.New(scripted.Step{Block: true}), func(c *manager.Config) {
		c.MaxConcurrent = 100
		c.MaxDepth = 3
	})
	spawn := func(parent string) *manager.Agent {
		a, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "wait", ParentID: parent})
		require.NoError(t, err)
		return a
	}
	root := spawn("")
	var children, grandchildren []*manager.Agent
	for range 3 {
		c := spawn(root.ID())
		children = append(children, c)
		for range 3 {
			grandchildren = append(grandchildren, spawn(c.ID()))
		}
	}
	bystander := spawn("")
	root.Cancel()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, a := range append(children, grandchildren...) {
		res, err := a.Wait(ctx)
		require.NoError(t, err, "every descendant ends when the root is cancelled")
		assert.Equal(t, manager.Cancelled, res.State)
		assert.Equal(t, manager.ReasonCancelled, res.Reason)
		assert.ErrorIs(t, res.Err, context.Canceled)
		assert.Contains(t, res.Error, root.ID()+" was cancelled", "the cause names the cancelled ancestor")
	}
	res, err := root.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, "agent cancelled: context canceled", res.Error, "the root itself was cancelled directly")
	assert.Equal(t, manager.Running, bystander.Info().State, "an unrelated agent goes on")
}

func TestEndingAParentEndsItsChildren(t *testing.T) {
	release := make(chan struct{})
	model := byTask(map[string][]scripted.Step{
		"parent": {{Func: func(ctx context.Context, _ []llms.MessageContent) scripted.Step {
			<-release
			return scripted.Step{Text: "parent done"}
		}}},
		"child": {{Block: true}},
	})
	// One slot: the parent runs and its children wait in the queue, so
	// this also checks that pending descendants end, not only running ones.
	f := newFixture(t, model, func(c *manager.Config) { c.MaxConcurrent = 1 })
	parent, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "parent"})
	require.NoError(t, err)
	var kids []*manager.Agent
	for range 3 {
		k, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "child", ParentID: parent.ID()})
		require.NoError(t, err)
		kids = append(kids, k)
	}
	close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := parent.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, manager.Completed, res.State)
	for _, k := range kids {
		r, err := k.Wait(ctx)
		require.NoError(t, err, "a child ends when its parent does")
		assert.Equal(t, manager.Cancelled, r.State)
		assert.Contains(t, r.Error, parent.ID()+" ended (completed)")
		assert.Zero(t, r.Turns, "a queued child never starts")
	}
	_, err = f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "child", ParentID: parent.ID()})
	assert.ErrorIs(t, err, manager.ErrBadRequest, "an ended parent can have no more children")
}

func TestSpawnParallelReturnsWhenItsContextEnds(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	stubborn := scripted.New(scripted.Step{Func: func(context.Context, []llms.MessageContent) scripted.Step {
		entered <- struct{}{}
		<-release // ignores its context
		return scripted.Step{Text: "late"}
	}})
	f := newFixture(t, stubborn, nil)
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-entered
		<-entered
		cancel()
	}()
	results, err := f.mgr.SpawnParallel(ctx, []manager.SpawnRequest{{Type: "worker", Task: "a"}, {Type: "worker", Task: "b"}})
	require.ErrorIs(t, err, context.Canceled, "SpawnParallel returns as soon as its context ends, while the models still run")
	require.Len(t, results, 2)
	for _, r := range results {
		assert.True(t, r.Partial)
		assert.Equal(t, manager.Running, r.State, "the agents had not ended yet")
		assert.NotEmpty(t, r.ID)
	}
}

func TestCascadeReachesAThousandAgents(t *testing.T) {
	f := newFixture(t, scripted.New(scripted.Step{Block: true}).WithoutRecording(), func(c *manager.Config) {
		c.MaxConcurrent = 2000
		c.MaxDepth = 2
		c.MaxChildren = 200
		c.MaxTreeAgents = 1000
	})
	root, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "root"})
	require.NoError(t, err)
	all := []*manager.Agent{}
	for i := range 9 {
		c, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: fmt.Sprint("child ", i), ParentID: root.ID()})
		require.NoError(t, err)
		all = append(all, c)
		for j := range 110 {
			g, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: fmt.Sprint("grandchild ", j), ParentID: c.ID()})
			require.NoError(t, err)
			all = append(all, g)
		}
	}
	require.Len(t, all, 999)
	root.Cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	results, err := f.mgr.WaitAll(ctx, ids(all)...)
	require.NoError(t, err)
	for _, r := range results {
		require.Equal(t, manager.Cancelled, r.State)
	}
}

func ids(agents []*manager.Agent) []string {
	out := make([]string, len(agents))
	for i, a := range agents {
		out[i] = a.ID()
	}
	return out
}

func TestChildWhoseTypeInheritsContextSeesItsParentsConversation(t *testing.T) {
	script := map[string][]scripted.Step{
		"find the refund bug": {
			{Text: "the bug is near refunds.go", Calls: []scripted.Call{{Name: "echo", Args: `{"text":"refunds.go:42"}`}}},
			{Calls: []scripted.Call{{Name: "child", Args: `{"task":"fix it","type":"heir"}`}, {Name: "child", Args: `{"task":"fix it too"}`}}},
			{Text: "parent done"},
		},
		// The parent's model, asked for a summary, sees the conversation.
		"Your conversation so far...": {{Func: func(_ context.Context, msgs []llms.MessageContent) scripted.Step {
			if strings.Contains(scripted.Text(msgs[1]), "echo:refunds.go:42") {
				return scripted.Step{Text: "SUMMARY: the refund bug is at refunds.go:42.", InputTokens: 40, OutputTokens: 10}
			}
			return scripted.Step{Text: "the summary call did not see the conversation"}
		}}},
	}
	for name, tc := range map[string]struct {
		retrievalOnly bool
		want          []string
	}{
		"a language model summarises": {want: []string{"summarises its work so far", "SUMMARY: the refund bug is at refunds.go:42.", "Your task:\nfix it"}},
		"the offline model passes a digest": {retrievalOnly: true, want: []string{
			"find the refund bug", "the bug is near refunds.go", "calls echo", "echo:refunds.go:42", "Your task:\nfix it",
		}},
	} {
		t.Run(name, func(t *testing.T) {
			var mgr *manager.Manager
			model := byTask(script)
			var m llms.Model = model
			if tc.retrievalOnly {
				m = retrieval{model}
			}
			f := newFixture(t, model, func(c *manager.Config) {
				c.MaxConcurrent = 3
				c.Models = manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return m, nil })
			}, spawnChildTool(&mgr))
			mgr = f.mgr
			typ, err := f.reg.Type("worker")
			require.NoError(t, err)
			heir := *typ
			heir.Name, heir.InheritContext = "heir", true
			require.NoError(t, f.reg.RegisterType(heir))

			res := f.run(t, manager.SpawnRequest{Task: "find the refund bug"})
			require.Equal(t, manager.Completed, res.State, res.Error)
			var heirTask, workerTask string
			for _, r := range model.Requests() {
				switch task := scripted.Text(r.Messages[1]); {
				case strings.HasSuffix(task, "fix it"):
					heirTask = task
				case strings.HasSuffix(task, "fix it too"):
					workerTask = task
				}
			}
			assert.Equal(t, "fix it too", workerTask, "a child whose type does not inherit gets its task alone")
			for _, want := range tc.want {
				assert.Contains(t, heirTask, want, "the inheriting child is told of its parent's conversation, then its task")
			}
			assert.NotContains(t, heirTask, "You work in", "the parent's system prompt is not passed on")
		})
	}
}
