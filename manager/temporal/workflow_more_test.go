package temporal

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager/scripted"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
)

// A background group under a token budget: the lead's next own model call
// (to collect) must still be made, as in process.
func TestWorkflowLeavesAParentAPartOfItsTokensBesideABackgroundGroup(t *testing.T) {
	budget := agenttypes.Budget{MaxTokens: 20000}
	want := inProcess(t, backgroundModel(t, false, false), "look into it", budget)
	env := testEnv(t, registry(t), backgroundModel(t, false, false))
	in := leadInput("look into it")
	in.Agent.Budget = budget
	got := runWorkflow(t, env, in)
	t.Logf("in process: %s %s %q usage %+v", want.State, want.Reason, want.Output, want.Usage)
	t.Logf("workflow:   %s %s %q usage %+v", got.End.State, got.End.Reason, got.End.Output, got.Usage)
	if got.End.State != want.State || got.End.Reason != want.Reason {
		t.Fatalf("workflow ended %s (%s): %s; in process %s (%s)", got.End.State, got.End.Reason, got.End.Error, want.State, want.Reason)
	}
}

// The same under a tool-call budget.
func TestWorkflowLeavesAParentAPartOfItsToolCallsBesideABackgroundGroup(t *testing.T) {
	budget := agenttypes.Budget{MaxToolCalls: 10}
	want := inProcess(t, backgroundModel(t, false, false), "look into it", budget)
	env := testEnv(t, registry(t), backgroundModel(t, false, false))
	in := leadInput("look into it")
	in.Agent.Budget = budget
	got := runWorkflow(t, env, in)
	t.Logf("in process: %s %s %q", want.State, want.Reason, want.Output)
	t.Logf("workflow:   %s %s %q", got.End.State, got.End.Reason, got.End.Output)
	if got.End.State != want.State || got.End.Reason != want.Reason || strings.Contains(got.End.Output, "budget") != strings.Contains(want.Output, "budget") {
		t.Fatalf("workflow ended %s (%s): %s; in process %s (%s)", got.End.State, got.End.Reason, got.End.Error, want.State, want.Reason)
	}
}

// A child's question under a token budget: the parent's model answers it
// in process.
func TestWorkflowParentAnswersUnderATokenBudget(t *testing.T) {
	budget := agenttypes.Budget{MaxTokens: 20000}
	want := inProcess(t, askingModel(), "look into it", budget)
	env := testEnv(t, registry(t), askingModel())
	in := leadInput("look into it")
	in.Agent.Budget = budget
	got := runWorkflow(t, env, in)
	t.Logf("in process: %s %q", want.State, want.Output)
	t.Logf("workflow:   %s %q", got.End.State, got.End.Output)
	if !strings.Contains(want.Output, "gamma") {
		t.Fatalf("in process the parent did not answer: %q", want.Output)
	}
	if !strings.Contains(got.End.Output, "gamma") {
		t.Fatalf("on Temporal the parent's model did not answer the question: %q", got.End.Output)
	}
}

// recollectModel: the lead delegates in the background, collects the
// group waiting for it, then collects it again, and reports the second
// collect's result.
func recollectModel() *scripted.Model {
	step := scripted.Step{Func: func(_ context.Context, msgs []llms.MessageContent) scripted.Step {
		system, turns := scripted.Text(msgs[0]), aiTurns(msgs)
		results := scripted.ToolResults(msgs)
		switch {
		case strings.Contains(system, "You lead.") && turns == 0:
			return scripted.Step{InputTokens: 100, OutputTokens: 20, Calls: []scripted.Call{{Name: "delegate", Args: scripted.JSON(map[string]any{
				"mode": "background", "tasks": []map[string]any{{"label": "a", "type": "helper", "prompt": "say alpha"}}})}}}
		case strings.Contains(system, "You lead.") && (turns == 1 || turns == 2):
			group := groupPattern.FindStringSubmatch(results[0].Content)
			if group == nil {
				return scripted.Step{Text: "no group in " + results[0].Content}
			}
			return scripted.Step{InputTokens: 200, OutputTokens: 20, Calls: []scripted.Call{{Name: "collect", Args: scripted.JSON(map[string]any{"group": group[1], "wait": 60})}}}
		case strings.Contains(system, "You lead."):
			return scripted.Step{InputTokens: 300, OutputTokens: 30, Text: "summary: " + results[len(results)-1].Content}
		case turns == 0:
			return scripted.Step{InputTokens: 50, OutputTokens: 10, Calls: []scripted.Call{{Name: "echo", Args: scripted.JSON(map[string]string{"text": "alpha"})}}}
		default:
			return scripted.Step{InputTokens: 70, OutputTokens: 12, Text: "helper heard " + results[len(results)-1].Content}
		}
	}}
	return scripted.New(step, step, step, step)
}

// A background group the lead collected before its run went on in a new
// workflow run is still its group there, as in process.
func TestWorkflowContinueAsNewKeepsEndedGroups(t *testing.T) {
	in := leadInput("look into it")
	want := inProcess(t, recollectModel(), "look into it", in.Agent.Budget)
	var out agentOutput
	for run := 0; ; run++ {
		if run > 10 {
			t.Fatal("no end after 10 workflow runs")
		}
		env := testEnv(t, registry(t), recollectModel())
		env.SetContinueAsNewSuggested(run == 0) // the first run goes on in a new one at its first chance
		env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: in.Agent.ID})
		env.ExecuteWorkflow(WorkflowName, in)
		err := env.GetWorkflowError()
		var can *workflow.ContinueAsNewError
		if errors.As(err, &can) {
			in = agentInput{}
			if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
				t.Fatal(err)
			}
			t.Logf("run %d went on in a new workflow run after %d turns", run, in.Agent.Spent.Turns)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := env.GetWorkflowResult(&out); err != nil {
			t.Fatal(err)
		}
		break
	}
	t.Logf("in process: %q", want.Output)
	t.Logf("workflow:   %q", out.End.Output)
	if strings.Contains(out.End.Output, "unknown group") || !strings.Contains(out.End.Output, "helper heard echo:alpha") {
		t.Fatalf("after ContinueAsNew the lead lost its group: %q", out.End.Output)
	}
}

// seeingModel is askingModel whose parent answers "saw-delegate" when the
// conversation it is shown holds its delegate call, and "blind" if not.
func seeingModel() *scripted.Model {
	inner := askingModel()
	step := scripted.Step{Func: func(ctx context.Context, msgs []llms.MessageContent) scripted.Step {
		if strings.Contains(scripted.Text(msgs[0]), "subagent asks you a question") {
			text := "blind"
			if strings.Contains(scripted.Text(msgs[len(msgs)-1]), "calls delegate") {
				text = "saw-delegate"
			}
			return scripted.Step{InputTokens: 40, OutputTokens: 5, Text: text}
		}
		resp, err := inner.GenerateContent(ctx, msgs)
		if err != nil {
			return scripted.Step{Err: err}
		}
		c := resp.Choices[0]
		st := scripted.Step{Text: c.Content, InputTokens: 1, OutputTokens: 1}
		for _, tc := range c.ToolCalls {
			st.Calls = append(st.Calls, scripted.Call{Name: tc.FunctionCall.Name, Args: tc.FunctionCall.Arguments})
		}
		return st
	}}
	return scripted.New(step, step, step, step)
}

// The parent's model answers a question with its conversation so far,
// its delegate call included, as in process.
func TestWorkflowAnswerSeesTheDelegateCall(t *testing.T) {
	want := inProcess(t, seeingModel(), "look into it", agenttypes.Budget{})
	env := testEnv(t, registry(t), seeingModel())
	got := runWorkflow(t, env, leadInput("look into it"))
	t.Logf("in process: %q", want.Output)
	t.Logf("workflow:   %q", got.End.Output)
	if strings.Contains(want.Output, "saw-delegate") != strings.Contains(got.End.Output, "saw-delegate") {
		t.Fatalf("the parent's model was shown another conversation than in process")
	}
}

// overlapModel: the lead delegates one helper in the background; its
// next model call is made while it answers the helper's question (each
// waits for the other to start); then it collects and reports. The
// helper asks, echoes the answer and reports.
func overlapModel() *scripted.Model {
	var mu sync.Mutex
	asked, called := make(chan struct{}), make(chan struct{})
	var askedOnce, calledOnce sync.Once
	meet := func(mine chan struct{}, once *sync.Once, other chan struct{}) {
		mu.Lock()
		once.Do(func() { close(mine) })
		mu.Unlock()
		select {
		case <-other:
		case <-time.After(time.Second): // they do not overlap: each goes on alone
		}
	}
	step := scripted.Step{Func: func(_ context.Context, msgs []llms.MessageContent) scripted.Step {
		system, turns := scripted.Text(msgs[0]), aiTurns(msgs)
		results := scripted.ToolResults(msgs)
		switch {
		case strings.Contains(system, "subagent asks you a question"):
			meet(asked, &askedOnce, called)
			return scripted.Step{InputTokens: 40, OutputTokens: 5, Text: "gamma"}
		case strings.Contains(system, "You lead.") && turns == 0:
			return scripted.Step{InputTokens: 100, OutputTokens: 20, Calls: []scripted.Call{{Name: "delegate", Args: scripted.JSON(map[string]any{
				"mode": "background", "tasks": []map[string]any{{"label": "a", "type": "helper", "prompt": "ask which word to say"}}})}}}
		case strings.Contains(system, "You lead.") && turns == 1:
			meet(called, &calledOnce, asked)
			group := groupPattern.FindStringSubmatch(results[0].Content)
			return scripted.Step{InputTokens: 200, OutputTokens: 20, Calls: []scripted.Call{{Name: "collect", Args: scripted.JSON(map[string]any{"group": group[1], "wait": 60})}}}
		case strings.Contains(system, "You lead."):
			return scripted.Step{InputTokens: 300, OutputTokens: 30, Text: "summary: " + results[len(results)-1].Content}
		}
		return askingHelper(turns, results)
	}}
	return scripted.New(step, step, step, step, step)
}

// The lead's answer to a question, made while its own loop calls its
// model, is a turn of its own, as in process.
func TestWorkflowAnswerBesideAModelCallCountsBothTurns(t *testing.T) {
	reg := registry(t)
	want := inProcess(t, overlapModel(), "look into it", agenttypes.Budget{})
	env := testEnv(t, reg, overlapModel())
	got := runWorkflow(t, env, leadInput("look into it"))
	t.Logf("in process: %d turns, usage %+v %q", want.Turns, want.Usage, want.Output)
	t.Logf("workflow:   %d turns, usage %+v %q", got.Turns, got.Usage, got.End.Output)
	if got.Turns != want.Turns {
		t.Fatalf("workflow counted %d turns of the lead, in process %d", got.Turns, want.Turns)
	}
}
