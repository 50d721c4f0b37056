package manager_test

import (
	"context"
	"encoding/json"
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

func delegateResponse(t *testing.T, tf *treeFixture, task string) agenttypes.DelegateResponse {
	t.Helper()
	var resp agenttypes.DelegateResponse
	require.NoError(t, json.Unmarshal([]byte(lastToolResult(t, tf.model, task)), &resp))
	return resp
}

func TestChildAsksItsParent(t *testing.T) {
	// The seed scenario: the child finds two authentication schemes and
	// asks which to prioritise; the parent answers from its task, and the
	// child's report reflects the answer.
	ask := scripted.Step{Text: "found JWT and session cookies", Calls: []scripted.Call{{Name: "ask_parent",
		Args: `{"question":"I found two authentication schemes, JWT and session cookies. Which should I prioritise?","suggestions":["JWT","sessions"]}`}}}
	report := scripted.Step{Func: func(_ context.Context, msgs []llms.MessageContent) scripted.Step {
		return scripted.Step{Text: "Report (" + scripted.ToolResults(msgs)[0].Content + "): covered first."}
	}}
	parentAnswers := scripted.Step{Func: func(_ context.Context, msgs []llms.MessageContent) scripted.Step {
		q := scripted.Text(msgs[1])
		if strings.Contains(q, "audit the public API") && strings.Contains(q, "Which should I prioritise?") && strings.Contains(q, "JWT; sessions") {
			return scripted.Step{Text: "JWT: the task is about the public API.", InputTokens: 70, OutputTokens: 10}
		}
		return scripted.Step{Text: "the question did not reach the parent whole: " + q}
	}}
	script := map[string][]scripted.Step{
		"audit the public API's auth": {delegateCall(agenttypes.DelegateRequest{Tasks: []agenttypes.ChildTask{{Label: "auth", Type: "worker", Prompt: "survey auth"}}}), {Text: "audit done"}},
		"survey auth":                 {ask, report},
		"Your conversation so far...": {parentAnswers},
	}
	for name, tc := range map[string]struct {
		handler manager.QuestionHandler
		want    string
		by      string
	}{
		"the parent's model answers": {want: "answer from parent: JWT: the task is about the public API.", by: "parent"},
		"a handler answers first": {
			handler: func(_ context.Context, q manager.QuestionInfo) (agenttypes.Answer, error) {
				return agenttypes.Answer{Text: "sessions, said the handler to " + q.From.Label}, nil
			},
			want: "answer from handler: sessions, said the handler to auth", by: "handler",
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			tf := newTreeFixture(t, script, func(c *manager.Config) { c.TranscriptDir = dir })
			res := tf.run(t, manager.SpawnRequest{Type: "lead", Task: "audit the public API's auth", OnQuestion: tc.handler})
			require.Equal(t, manager.Completed, res.State, res.Error)
			resp := delegateResponse(t, tf, "audit the public API's auth")
			require.Len(t, resp.Results, 1)
			assert.Equal(t, "Report ("+tc.want+"): covered first.", resp.Results[0].Report, "the child's report reflects the answer")

			events := agentEvents(t, res.Transcript, resp.Results[0].ID)
			var qa []manager.Event
			for _, e := range events {
				if e.Kind == manager.EventQuestion || e.Kind == manager.EventAnswer {
					qa = append(qa, e)
				}
			}
			require.Len(t, qa, 2, "both sides are in the child's transcript")
			assert.Contains(t, qa[0].Text, "Which should I prioritise?")
			assert.Equal(t, tc.by, qa[1].Tool)

			parentCalls := 0
			for _, r := range tf.model.Requests() {
				if strings.HasPrefix(scripted.Text(r.Messages[1]), "Your conversation so far") {
					parentCalls++
				}
			}
			if tc.handler == nil {
				assert.Equal(t, 1, parentCalls, "one extra model call of the parent")
				assert.GreaterOrEqual(t, res.OwnUsage.Total(), 80, "counted to the parent")
			} else {
				assert.Zero(t, parentCalls, "a handler's answer spares the parent's model")
			}
		})
	}
}

func TestUnansweredQuestionIsAResultTheChildCanUse(t *testing.T) {
	ask := scripted.Step{Calls: []scripted.Call{{Name: "ask_parent", Args: `{"question":"which one?"}`}}}
	done := scripted.Step{Func: func(_ context.Context, msgs []llms.MessageContent) scripted.Step {
		return scripted.Step{Text: "went ahead after: " + scripted.ToolResults(msgs)[0].Content}
	}}
	script := map[string][]scripted.Step{
		"lead it": {delegateCall(agenttypes.DelegateRequest{Tasks: []agenttypes.ChildTask{{Label: "q", Type: "worker", Prompt: "ask"}}}), {Text: "ok"}},
		"ask":     {ask, done},
		// The parent's model passes the question on to the user.
		"Your conversation so far...": {{Text: "ESCALATE"}},
	}
	tf := newTreeFixture(t, script, nil)
	res := tf.run(t, manager.SpawnRequest{Type: "lead", Task: "lead it"})
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.Equal(t, "went ahead after: no answer", delegateResponse(t, tf, "lead it").Results[0].Report, "with no user, the child is told nobody answered")

	tf = newTreeFixture(t, script, func(c *manager.Config) {
		c.AskUser = func(_ context.Context, q manager.QuestionInfo) (string, error) {
			return "the first, says the user", nil
		}
	})
	res = tf.run(t, manager.SpawnRequest{Type: "lead", Task: "lead it"})
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.Equal(t, "went ahead after: answer from user: the first, says the user", delegateResponse(t, tf, "lead it").Results[0].Report)

	tf = newTreeFixture(t, script, func(c *manager.Config) {
		c.QuestionTimeout = 20 * time.Millisecond
		c.AskUser = func(ctx context.Context, _ manager.QuestionInfo) (string, error) {
			<-ctx.Done() // a user who never answers
			return "", ctx.Err()
		}
	})
	res = tf.run(t, manager.SpawnRequest{Type: "lead", Task: "lead it"})
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.Equal(t, "went ahead after: no answer", delegateResponse(t, tf, "lead it").Results[0].Report, "no answer in time is a result too")
}

func TestResumeContinuesAFinishedAgent(t *testing.T) {
	script := map[string][]scripted.Step{
		"first look": {{Text: "the parser lives in parse.go"}, {Text: "the lexer is in lex.go"}},
	}
	tf := newTreeFixture(t, script, nil)
	first := tf.run(t, manager.SpawnRequest{Type: "worker", Task: "first look"})
	require.Equal(t, manager.Completed, first.State)

	second := tf.run(t, manager.SpawnRequest{Type: "worker", Task: "and the lexer?", Resume: first.ID})
	require.Equal(t, manager.Completed, second.State, second.Error)
	assert.Equal(t, "the lexer is in lex.go", second.Output)
	reqs := tf.model.Requests()
	last := reqs[len(reqs)-1]
	var texts []string
	for _, m := range last.Messages {
		texts = append(texts, scripted.Text(m))
	}
	assert.Equal(t, []string{"You work in .", "first look", "the parser lives in parse.go", "and the lexer?"}, texts,
		"the model sees the earlier conversation, then the new prompt")

	_, err := tf.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "lead", Task: "x", Resume: first.ID})
	assert.ErrorIs(t, err, manager.ErrBadRequest, "resume keeps the type")
}

func TestDelegateResumesAChildOfTheTree(t *testing.T) {
	var firstID string
	script := map[string][]scripted.Step{
		"two rounds": {
			delegateCall(agenttypes.DelegateRequest{Tasks: []agenttypes.ChildTask{{Label: "r1", Type: "worker", Prompt: "round one"}}}),
			{Func: func(_ context.Context, msgs []llms.MessageContent) scripted.Step {
				var resp agenttypes.DelegateResponse
				_ = json.Unmarshal([]byte(scripted.ToolResults(msgs)[0].Content), &resp)
				firstID = resp.Results[0].ID
				return delegateCall(agenttypes.DelegateRequest{Tasks: []agenttypes.ChildTask{{Label: "r2", Prompt: "round two", Resume: firstID}}})
			}},
			{Text: "both rounds done"},
		},
		"round one": {{Text: "one"}, {Func: func(_ context.Context, msgs []llms.MessageContent) scripted.Step {
			return scripted.Step{Text: "two, after " + scripted.Text(msgs[2])}
		}}},
	}
	tf := newTreeFixture(t, script, nil)
	res := tf.run(t, manager.SpawnRequest{Type: "lead", Task: "two rounds"})
	require.Equal(t, manager.Completed, res.State, res.Error)
	resp := delegateResponse(t, tf, "two rounds")
	require.Len(t, resp.Results, 1)
	assert.Equal(t, "two, after one", resp.Results[0].Report, "the resumed child continued its own conversation")
	assert.Equal(t, "worker", resp.Results[0].Type, "a resumed task keeps the type of the agent it resumes")
}

func TestBackgroundGroupReturnsAtOnceAndDeliversLater(t *testing.T) {
	release := make(chan struct{})
	slow := scripted.Step{Func: func(context.Context, []llms.MessageContent) scripted.Step {
		<-release
		return scripted.Step{Text: "late finding"}
	}}
	var started agenttypes.DelegateResponse
	script := map[string][]scripted.Step{
		"start in the background": {
			delegateCall(agenttypes.DelegateRequest{Background: true, Tasks: []agenttypes.ChildTask{
				{Label: "bg1", Type: "worker", Prompt: "bg one"}, {Label: "bg2", Type: "worker", Prompt: "bg two"},
			}}),
			{Func: func(_ context.Context, msgs []llms.MessageContent) scripted.Step {
				if err := json.Unmarshal([]byte(scripted.ToolResults(msgs)[0].Content), &started); err != nil {
					return scripted.Step{Text: "bad delegate result: " + err.Error()}
				}
				close(release) // the children finish only once the parent has the group
				return scripted.Step{Calls: []scripted.Call{{Name: "collect", Args: scripted.JSON(agenttypes.CollectRequest{Group: started.Group, Wait: 5 * time.Second})}}}
			}},
			{Text: "collected"},
		},
		"bg one": {slow},
		"bg two": {slow},
	}
	tf := newTreeFixture(t, script, nil)
	var groups []*manager.Group
	var mu sync.Mutex
	tf.mgr.OnGroupDone(func(g *manager.Group) { mu.Lock(); groups = append(groups, g); mu.Unlock() })
	sub := tf.mgr.Subscribe()
	res := tf.run(t, manager.SpawnRequest{Type: "lead", Task: "start in the background"})
	require.Equal(t, manager.Completed, res.State, res.Error)
	require.Len(t, started.Children, 2)
	assert.Empty(t, started.Results, "a background request returns before any result")

	var collected agenttypes.CollectResponse
	require.NoError(t, json.Unmarshal([]byte(lastToolResult(t, tf.model, "start in the background")), &collected))
	assert.True(t, collected.Done)
	require.Len(t, collected.Results, 2)
	for i, r := range collected.Results {
		assert.Equal(t, started.Children[i].ID, r.ID, "collect answers in task order")
		assert.Equal(t, "late finding", r.Report)
	}
	require.NoError(t, tf.mgr.Close(context.Background()))
	groupDone := 0
	for e := range sub.C() {
		if e.Kind == manager.EventGroupDone && e.Group == started.Group {
			groupDone++
			assert.Equal(t, res.ID, e.AgentID, "the group's event is its parent's")
		}
	}
	assert.Equal(t, 1, groupDone)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, groups, 1)
	assert.Equal(t, started.Group, groups[0].ID())
}

func TestParentEndingCancelsItsBackgroundChildren(t *testing.T) {
	script := map[string][]scripted.Step{
		"fire and forget": {delegateCall(agenttypes.DelegateRequest{Background: true, Tasks: []agenttypes.ChildTask{
			{Label: "orphan?", Type: "worker", Prompt: "run forever"},
		}}), {Text: "I am done"}},
		"run forever": {{Block: true}},
	}
	tf := newTreeFixture(t, script, nil)
	res := tf.run(t, manager.SpawnRequest{Type: "lead", Task: "fire and forget"})
	require.Equal(t, manager.Completed, res.State)
	kids := tf.mgr.List(manager.Filter{ParentID: res.ID})
	require.Len(t, kids, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := tf.mgr.Wait(ctx, kids[0].ID)
	require.NoError(t, err, "no orphans: the child ends with its parent")
	assert.Equal(t, manager.Cancelled, r.State)
	assert.Contains(t, r.Error, res.ID+" ended (completed)")
}

// pricedModel is a scripted model that knows its price: each step says
// what it cost (CostUSD), so it gives none by the token.
type pricedModel struct{ *scripted.Model }

func (pricedModel) Cost(int, int) (float64, bool) { return 0, true }

func TestCostBudget(t *testing.T) {
	steps := []scripted.Step{}
	for range 5 {
		steps = append(steps, scripted.Step{Text: "spending", Calls: []scripted.Call{{Name: "echo", Args: `{"text":"x"}`}}, CostUSD: 0.04})
	}
	for name, priced := range map[string]bool{"priced": true, "unpriced": false} {
		t.Run(name, func(t *testing.T) {
			var m llms.Model = scripted.New(steps...)
			if priced {
				m = pricedModel{m.(*scripted.Model)}
			}
			f := newFixture(t, nil, func(c *manager.Config) {
				c.Models = manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return m, nil })
			})
			a, err := f.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "t", Budget: agenttypes.Budget{MaxCostUSD: 0.10}})
			if !priced {
				require.ErrorIs(t, err, manager.ErrBadRequest)
				assert.Contains(t, err.Error(), "no known price")
				return
			}
			require.NoError(t, err)
			res, err := a.Wait(context.Background())
			require.NoError(t, err)
			assert.Equal(t, manager.ReasonBudgetCost, res.Reason)
			assert.InDelta(t, 0.12, res.Usage.CostUSD, 1e-9, "it stops after the call that passed the budget")
			assert.Equal(t, 2, res.ToolCalls, "the third call's tools are not run")
		})
	}
}

// recordingModel notes which model name answered which task.
type recordingModel struct {
	*scripted.Model
	name  string
	mu    *sync.Mutex
	calls *[]string
}

func (r recordingModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	r.mu.Lock()
	*r.calls = append(*r.calls, r.name+": "+scripted.Text(msgs[1]))
	r.mu.Unlock()
	return r.Model.GenerateContent(ctx, msgs, opts...)
}

func TestChildModelsAreTheOnesCalled(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	script := map[string][]scripted.Step{
		"delegate to the pinned type": {delegateCall(agenttypes.DelegateRequest{Tasks: []agenttypes.ChildTask{
			{Label: "pinned", Type: "pinned", Prompt: "pinned work"},
			{Label: "chosen", Type: "worker", Prompt: "chosen work", Model: "other:model"},
			{Label: "inherited", Type: "worker", Prompt: "inherited work"},
		}}), {Text: "ok"}},
		"pinned work":    {{Text: "done"}},
		"chosen work":    {{Text: "done"}},
		"inherited work": {{Text: "done"}},
	}
	tf := newTreeFixture(t, script, func(c *manager.Config) {
		inner := byTask(script)
		c.DefaultModel = "default:model"
		c.Models = manager.ModelResolverFunc(func(_ context.Context, name string) (llms.Model, error) {
			return recordingModel{inner, name, &mu, &calls}, nil
		})
	})
	require.NoError(t, tf.reg.RegisterType(agenttypes.Type{Name: "pinned", Description: "d", Model: "special:model", Tools: []string{"echo"}}))
	res := tf.run(t, manager.SpawnRequest{Type: "lead", Task: "delegate to the pinned type", Model: "parent:model"})
	require.Equal(t, manager.Completed, res.State, res.Error)
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, calls, "special:model: pinned work", "a type's own model: is the model actually called")
	assert.Contains(t, calls, "other:model: chosen work", "a task's model is honoured")
	assert.Contains(t, calls, "parent:model: inherited work", "otherwise a child runs on its parent's model")
}

func TestMaxOutputTokensCapsEachCall(t *testing.T) {
	script := map[string][]scripted.Step{
		"cap it":       {delegateCall(agenttypes.DelegateRequest{Tasks: []agenttypes.ChildTask{{Label: "c", Type: "worker", Prompt: "short answer", MaxOutputTokens: 300}}}), {Text: "ok"}},
		"short answer": {{Text: "brief"}},
	}
	tf := newTreeFixture(t, script, nil)
	res := tf.run(t, manager.SpawnRequest{Type: "lead", Task: "cap it", Budget: agenttypes.Budget{MaxTokens: 50_000}})
	require.Equal(t, manager.Completed, res.State, res.Error)
	reqs := requestsFor(tf.model, "short answer")
	require.Len(t, reqs, 1)
	assert.Equal(t, 300, reqs[0].MaxTokens)
}

func TestADetachedChildOutlivesItsParent(t *testing.T) {
	release, gate := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	defer releaseOnce.Do(func() { close(release) })
	script := map[string][]scripted.Step{
		"parent": {{Func: func(context.Context, []llms.MessageContent) scripted.Step {
			<-gate
			return scripted.Step{Text: "parent done"}
		}}},
		"detached": {{Func: func(context.Context, []llms.MessageContent) scripted.Step {
			<-release
			return scripted.Step{Text: "still here"}
		}}},
		"attached": {{Block: true}},
	}
	tf := newTreeFixture(t, script, nil)
	parent, err := tf.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "parent"})
	require.NoError(t, err)
	detached, err := tf.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "detached", ParentID: parent.ID(), Detach: true})
	require.NoError(t, err)
	attached, err := tf.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "attached", ParentID: parent.ID()})
	require.NoError(t, err)
	close(gate)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = parent.Wait(ctx)
	require.NoError(t, err)
	r, err := attached.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, manager.Cancelled, r.State, "an attached child ends with its parent")
	assert.False(t, detached.Info().State.Terminal(), "a detached child goes on")
	releaseOnce.Do(func() { close(release) })
	r, err = detached.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, "still here", r.Output)
}

// A parent that ends while a background child is still spending ends
// after it: its usage holds what the child spent, and the child's end and
// the group's come before the parent's in the transcript.
func TestParentEndsAfterItsBackgroundChildren(t *testing.T) {
	childCalled := make(chan struct{})
	script := map[string][]scripted.Step{
		"start and finish": {
			{Calls: []scripted.Call{{Name: "delegate", Args: scripted.JSON(agenttypes.DelegateRequest{Background: true, Tasks: []agenttypes.ChildTask{
				{Label: "slow", Type: "worker", Prompt: "take your time"},
			}})}}, InputTokens: 10, OutputTokens: 5},
			{Func: func(context.Context, []llms.MessageContent) scripted.Step {
				<-childCalled // the child's model call is under way
				return scripted.Step{Text: "done without waiting", InputTokens: 10, OutputTokens: 5}
			}},
		},
		// A model call that ignores its context: the tokens are spent
		// whatever happens to the run meanwhile.
		"take your time": {{Func: func(context.Context, []llms.MessageContent) scripted.Step {
			close(childCalled)
			time.Sleep(200 * time.Millisecond)
			return scripted.Step{Text: "late report", InputTokens: 400, OutputTokens: 100}
		}}},
	}
	dir := t.TempDir()
	tf := newTreeFixture(t, script, func(c *manager.Config) { c.TranscriptDir = dir; c.MaxConcurrent = 2 })
	res := tf.run(t, manager.SpawnRequest{Type: "lead", Task: "start and finish"})
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.Equal(t, 30, res.OwnUsage.Total())
	assert.Equal(t, 530, res.Usage.Total(), "the parent's usage holds what its child spent after the parent answered")

	events, err := manager.ReadTranscript(res.Transcript)
	require.NoError(t, err)
	at := func(match func(manager.Event) bool) int {
		for i, e := range events {
			if match(e) {
				return i
			}
		}
		t.Fatal("no such event")
		return -1
	}
	childEnd := at(func(e manager.Event) bool { return e.Kind == manager.EventCompleted && e.Label == "slow" })
	groupDone := at(func(e manager.Event) bool { return e.Kind == manager.EventGroupDone && e.AgentID == res.ID })
	parentEnd := at(func(e manager.Event) bool { return e.Kind == manager.EventCompleted && e.AgentID == res.ID })
	assert.Less(t, childEnd, parentEnd, "the child ends before its parent")
	assert.Less(t, groupDone, parentEnd, "the group is done before its parent ends")
	assert.Equal(t, manager.Cancelled, events[childEnd].State, "the parent's end cancelled the child")
}
