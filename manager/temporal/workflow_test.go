package temporal

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/tmc/langchaingo/llms"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/tools"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
	"github.com/troupe-dev/troupe/manager/stepwire"
	"github.com/troupe-dev/troupe/sdk/fault"
)

var echoTool = &agenttypes.ToolFunc{
	ToolSpec: agenttypes.ToolSpec{Name: "echo", Description: "echoes text", ReadOnly: true},
	Func: func(_ context.Context, args json.RawMessage) (string, error) {
		var in struct{ Text string }
		if err := json.Unmarshal(args, &in); err != nil {
			return "", err
		}
		return "echo:" + in.Text, nil
	},
}

// registry holds "lead", which delegates, and "helper", which echoes.
func registry(t *testing.T) *agenttypes.Registry {
	t.Helper()
	reg := agenttypes.NewRegistry()
	for _, tool := range append([]agenttypes.Tool{echoTool}, tools.Delegation()...) {
		if err := reg.RegisterTool(tool); err != nil {
			t.Fatal(err)
		}
	}
	for _, typ := range []agenttypes.Type{
		{Name: "lead", Description: "leads", Prompt: "You lead.", Tools: []string{"delegate", "collect", "echo"}},
		{Name: "helper", Description: "helps", Prompt: "You help.", Tools: []string{"echo"}},
	} {
		if err := reg.RegisterType(typ); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// treeModel plays a lead that delegates two tasks and sums up what its
// helpers said, and helpers that echo their task's last word and report.
func treeModel() *scripted.Model { return treeModelTokens(100, 300) }

// treeModelTokens is treeModel with the input tokens the lead's two calls
// report.
func treeModelTokens(first, last int) *scripted.Model {
	step := scripted.Step{Func: func(_ context.Context, msgs []llms.MessageContent) scripted.Step {
		system, turns := scripted.Text(msgs[0]), aiTurns(msgs)
		results := scripted.ToolResults(msgs)
		switch {
		case strings.Contains(system, "You lead.") && turns == 0:
			return scripted.Step{InputTokens: first, OutputTokens: 20, Calls: []scripted.Call{{Name: "delegate", Args: scripted.JSON(map[string]any{
				"tasks": []map[string]any{{"label": "a", "type": "helper", "prompt": "say alpha"}, {"label": "b", "type": "helper", "prompt": "say beta"}}})}}}
		case strings.Contains(system, "You lead."):
			return scripted.Step{InputTokens: last, OutputTokens: 30, Text: "summary: " + results[len(results)-1].Content}
		case turns == 0:
			task := scripted.Text(msgs[len(msgs)-1])
			word := task[strings.LastIndex(task, " ")+1:]
			return scripted.Step{InputTokens: 50, OutputTokens: 10, Calls: []scripted.Call{{Name: "echo", Args: scripted.JSON(map[string]string{"text": word})}}}
		default:
			return scripted.Step{InputTokens: 70, OutputTokens: 12, Text: "helper heard " + results[len(results)-1].Content}
		}
	}}
	return scripted.New(step, step, step)
}

func newManager(t *testing.T, reg *agenttypes.Registry, model llms.Model, backend manager.Backend) *manager.Manager {
	t.Helper()
	cfg := manager.Config{
		Logger: slog.New(slog.DiscardHandler), Registry: reg, DefaultModel: "scripted", MaxDepth: 1,
		Models: manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil }),
	}
	if backend != nil {
		cfg.Backend, cfg.Models = backend, nil
	}
	m, err := manager.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return m
}

// testEnv is the SDK's workflow test environment with the workflow and
// activities registered, run by a manager of reg and model.
func testEnv(t *testing.T, reg *agenttypes.Registry, model llms.Model) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	register(env, &activities{steps: stepwire.Local{Manager: newManager(t, reg, model, nil)}, root: t.TempDir()})
	// The test environment does not carry signals between workflows:
	// each is delivered here.
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, mock.Anything, mock.Anything, mock.Anything).Return(
		func(_, workflowID, _, name string, arg any) error {
			return env.SignalWorkflowByID(workflowID, name, arg)
		})
	return env
}

func runWorkflow(t *testing.T, env *testsuite.TestWorkflowEnvironment, in agentInput) agentOutput {
	t.Helper()
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: in.Agent.ID}) // as Backend.Run names it
	env.ExecuteWorkflow(WorkflowName, in)
	if !env.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out agentOutput
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func leadInput(task string) agentInput {
	return agentInput{Agent: manager.StepAgent{ID: "00000000-0000-4000-8000-00000000000a", Type: "lead", Task: task, Dir: ".", MaxDepth: 1}}
}

// inProcess runs the lead on a manager of its own, for the result the
// workflow must give.
func inProcess(t *testing.T, model llms.Model, task string, budget agenttypes.Budget) manager.Result {
	t.Helper()
	m := newManager(t, registry(t), model, nil)
	a, err := m.Spawn(context.Background(), manager.SpawnRequest{Type: "lead", Task: task, Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := a.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var (
	uuidPattern     = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	durationPattern = regexp.MustCompile(`, [0-9.]+(µs|ms|s|m)\n`)
)

// normal is an output with its agent IDs and durations, which differ
// from run to run, made the same.
func normal(s string) string {
	return durationPattern.ReplaceAllString(uuidPattern.ReplaceAllString(s, "ID"), ", DURATION\n")
}

func TestWorkflowRunsATreeAsTheManagerDoes(t *testing.T) {
	want := inProcess(t, treeModel(), "look into it", agenttypes.Budget{})
	if want.State != manager.Completed {
		t.Fatalf("in process: %s %s %s", want.State, want.Reason, want.Error)
	}
	env := testEnv(t, registry(t), treeModel())
	got := runWorkflow(t, env, leadInput("look into it"))
	if got.End.State != manager.Completed || normal(got.End.Output) != normal(want.Output) {
		t.Fatalf("workflow ended %s (%s %s) with %q; in process %q", got.End.State, got.End.Reason, got.End.Error, got.End.Output, want.Output)
	}
	for _, s := range []string{"helper heard echo:alpha", "helper heard echo:beta"} {
		if !strings.Contains(got.End.Output, s) {
			t.Errorf("the lead's answer leaves out %q: %s", s, got.End.Output)
		}
	}
	if got.Usage != want.Usage || got.OwnUsage != want.OwnUsage || got.Turns != want.Turns || got.ToolCalls != want.ToolCalls {
		t.Errorf("workflow: usage %+v own %+v, %d turns, %d tool calls; in process: %+v own %+v, %d turns, %d tool calls",
			got.Usage, got.OwnUsage, got.Turns, got.ToolCalls, want.Usage, want.OwnUsage, want.Turns, want.ToolCalls)
	}
}

// recordedHistory is a history iterator over a recorded history.
type recordedHistory struct{ events []*historypb.HistoryEvent }

func (h *recordedHistory) HasNext() bool { return len(h.events) > 0 }

func (h *recordedHistory) Next() (*historypb.HistoryEvent, error) {
	e := h.events[0]
	h.events = h.events[1:]
	return e, nil
}

func readHistory(t *testing.T, name string) []*historypb.HistoryEvent {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "histories", name))
	if err != nil {
		t.Fatal(err)
	}
	h := &historypb.History{}
	if err := (temporalproto.CustomJSONUnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, h); err != nil {
		t.Fatal(err)
	}
	return h.Events
}

// TestFollowerReadsARunsEventsFromItsHistories follows the recorded
// histories of a tree as a client follows a run: each child's spawn, each
// step's events, each end, with every agent's events in order.
func TestFollowerReadsARunsEventsFromItsHistories(t *testing.T) {
	lead, child := readHistory(t, "tree-lead.json"), readHistory(t, "tree-child.json")
	leadID := lead[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowId()
	childID := child[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowId()
	var events []manager.Event
	f := newFollower(nil, leadID, "", func(e manager.Event) { events = append(events, e) })
	f.history = func(_ context.Context, id, _ string) client.HistoryEventIterator {
		switch id {
		case leadID:
			return &recordedHistory{events: lead}
		case childID:
			return &recordedHistory{events: child}
		}
		return &recordedHistory{} // the other child's history is not recorded
	}
	f.start(context.Background())(300 * time.Millisecond) // the other child's history never comes

	var seen []string
	spawned := 0
	for _, e := range events {
		if e.AgentID == leadID || e.AgentID == childID {
			who := "lead"
			if e.AgentID == childID {
				who = "child"
			}
			seen = append(seen, who+":"+string(e.Kind))
		}
		if e.Kind == manager.EventSpawned {
			spawned++
			if e.ParentID != leadID || e.Type != "helper" || e.Depth != 1 || e.Group == "" {
				t.Errorf("spawned %+v: want a helper at depth 1 of the lead's group", e)
			}
		}
	}
	if spawned != 2 {
		t.Errorf("%d children spawned, want 2", spawned)
	}
	for _, want := range [][]string{
		{"lead:state", "lead:model_call", "lead:tool_call", "child:spawned", "lead:tool_result", "lead:model_call", "lead:state", "lead:completed"},
		{"child:spawned", "child:state", "child:model_call", "child:tool_call", "child:tool_result", "child:model_call", "child:state", "child:completed"},
	} {
		if got := inOrder(seen, want); got != "" {
			t.Errorf("%s (events: %v)", got, seen)
		}
	}
	if last := events[len(events)-1]; last.AgentID != leadID || last.Kind != manager.EventCompleted || last.State != manager.Completed {
		t.Errorf("the last event is %s %s of %s, want the lead's end", last.Kind, last.State, last.AgentID)
	}
}

// inOrder says what of want is missing from got, in want's order.
func inOrder(got, want []string) string {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	if i < len(want) {
		return fmt.Sprintf("%q is missing after %q", want[i], want[:i])
	}
	return ""
}

// blockingModel plays a lead that delegates two tasks, and helpers whose
// model call waits until it is cancelled, or, since the SDK's test
// environment does not cancel an activity its workflow gave up on, until
// the test ends.
func blockingModel(t *testing.T) *scripted.Model {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	step := scripted.Step{Func: func(ctx context.Context, msgs []llms.MessageContent) scripted.Step {
		if strings.Contains(scripted.Text(msgs[0]), "You lead.") && len(msgs) == 2 {
			return scripted.Step{Calls: []scripted.Call{{Name: "delegate", Args: scripted.JSON(map[string]any{
				"tasks": []map[string]any{{"label": "a", "type": "helper", "prompt": "wait"}, {"label": "b", "type": "helper", "prompt": "wait"}}})}}}
		}
		if strings.Contains(scripted.Text(msgs[0]), "You lead.") {
			return scripted.Step{Text: "should not be asked"}
		}
		select {
		case <-ctx.Done():
		case <-release:
		}
		return scripted.Step{Err: context.Canceled}
	}}
	return scripted.New(step, step)
}

func TestWorkflowCancelReachesEveryChild(t *testing.T) {
	env := testEnv(t, registry(t), blockingModel(t))
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Second)
	got := runWorkflow(t, env, leadInput("wait for them"))
	if got.End.State != manager.Cancelled || got.End.Reason != manager.ReasonCancelled {
		t.Fatalf("the lead ended %s (%s): %s; want cancelled", got.End.State, got.End.Reason, got.End.Error)
	}
	// The lead ends after its children (its delegate waits for them, and
	// their model calls block until cancelled): it ending at all shows
	// the cancel reached them.
}

func TestWorkflowHoldsATokenBudgetAsTheManagerDoes(t *testing.T) {
	for _, c := range []struct {
		name        string
		first, last int
		budget      int
		crossed     bool
	}{
		// The lead's last answer takes the tree past its budget, and is kept.
		{name: "an answer past it", first: 100, last: 3000, budget: 2500, crossed: true},
		// The lead's first call leaves 80 tokens: too few for its
		// children, or for itself.
		{name: "used up", first: 900, last: 300, budget: 1000},
	} {
		t.Run(c.name, func(t *testing.T) {
			budget := agenttypes.Budget{MaxTokens: c.budget}
			want := inProcess(t, treeModelTokens(c.first, c.last), "look into it", budget)
			env := testEnv(t, registry(t), treeModelTokens(c.first, c.last))
			in := leadInput("look into it")
			in.Agent.Budget = budget
			got := runWorkflow(t, env, in)
			if got.End.State != want.State || got.End.Reason != want.Reason || got.End.TokensOverBudget != want.TokensOverBudget ||
				got.Usage != want.Usage || normal(got.End.Output) != normal(want.Output) {
				t.Fatalf("workflow: %s %s, %d over, usage %+v, %q; in process: %s %s, %d over, usage %+v, %q",
					got.End.State, got.End.Reason, got.End.TokensOverBudget, got.Usage, got.End.Output,
					want.State, want.Reason, want.TokensOverBudget, want.Usage, want.Output)
			}
			if crossed := want.TokensOverBudget > 0; crossed != c.crossed {
				t.Fatalf("in process the budget was crossed: %v, want %v; the case no longer checks what it says", crossed, c.crossed)
			}
			if got.Usage.Total() > c.budget+got.End.TokensOverBudget {
				t.Errorf("the tree spent %d tokens of %d (%d over on a kept answer)", got.Usage.Total(), c.budget, got.End.TokensOverBudget)
			}
		})
	}
}

// TestReplayRecordedHistories replays histories that an earlier version
// of the workflow recorded (TestIntegrationHistoriesReplayThroughTheWorkflow
// writes them): a change that would break runs under way on a cluster
// fails here.
func TestReplayRecordedHistories(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no recorded histories (%v)", err)
	}
	for _, path := range paths {
		r := worker.NewWorkflowReplayer()
		r.RegisterWorkflowWithOptions(agentWorkflow, workflow.RegisterOptions{Name: WorkflowName})
		if err := r.ReplayWorkflowHistoryFromJSONFile(log.NewStructuredLogger(slog.New(slog.DiscardHandler)), path); err != nil {
			t.Errorf("%s does not replay: %v", path, err)
		}
	}
}

func TestWorkflowTimeBudgetEndsARunStuckInAStep(t *testing.T) {
	env := testEnv(t, registry(t), blockingModel(t))
	in := agentInput{Agent: manager.StepAgent{ID: "h", Type: "helper", Task: "wait", Dir: ".", Budget: agenttypes.Budget{MaxTime: 2 * time.Second}}}
	got := runWorkflow(t, env, in)
	if got.End.State != manager.Failed || got.End.Reason != manager.ReasonBudgetTime || !strings.Contains(got.End.Error, "time budget of 2s") {
		t.Fatalf("ended %s (%s): %s; want failed on its time budget", got.End.State, got.End.Reason, got.End.Error)
	}
}

func TestWorkerRefusesADirectoryOutsideItsCheckout(t *testing.T) {
	a := &activities{root: t.TempDir()}
	for _, dir := range []string{"sub/../../../etc", "..", "/etc", "../sibling"} {
		if _, err := a.input(stepwire.Input{Agent: manager.StepAgent{Dir: dir}}); err == nil {
			t.Errorf("directory %q was taken inside the checkout", dir)
		}
	}
	for _, dir := range []string{".", "sub", "sub/../other"} {
		in, err := a.input(stepwire.Input{Agent: manager.StepAgent{Dir: dir}})
		if err != nil || !strings.HasPrefix(in.Agent.Dir, a.root) {
			t.Errorf("directory %q: %q, %v; want it inside the checkout", dir, in.Agent.Dir, err)
		}
	}
}

func TestWorkflowRefusesChildrenTheBudgetCannotPayForAsTheManagerDoes(t *testing.T) {
	// The delegate call is the lead's one tool call: none is left for
	// its children, and the delegation is refused.
	budget := agenttypes.Budget{MaxToolCalls: 1}
	want := inProcess(t, treeModel(), "look into it", budget)
	env := testEnv(t, registry(t), treeModel())
	in := leadInput("look into it")
	in.Agent.Budget = budget
	got := runWorkflow(t, env, in)
	if got.SubtreeToolCalls != 1 || got.Usage != want.Usage || normal(got.End.Output) != normal(want.Output) {
		t.Fatalf("workflow: %d tool calls in the tree, usage %+v, %q; in process: usage %+v, %q",
			got.SubtreeToolCalls, got.Usage, got.End.Output, want.Usage, want.Output)
	}
	if !strings.Contains(got.End.Output, "has used all 1 of its tool calls") {
		t.Errorf("the lead was not told why its children were refused: %q", got.End.Output)
	}
}

func TestWorkflowKeepsASubtreeWithinItsShareOfTreeAgents(t *testing.T) {
	env := testEnv(t, registry(t), treeModel())
	in := leadInput("look into it")
	in.Limits.TreeAgents = 2 // the lead and one child at a time; it asks for two at once
	got := runWorkflow(t, env, in)
	if !strings.Contains(got.End.Output, "may have 2 agents alive at once") {
		t.Fatalf("the lead was not refused two children at once: %q", got.End.Output)
	}
}

var groupPattern = regexp.MustCompile(`Started group (g-[0-9a-f]+)`)

// backgroundModel plays a lead that delegates two tasks in the
// background, collects them (waiting, or cancelling them with cancel
// set), and sums up; its helpers echo and report, or with block wait
// until cancelled.
func backgroundModel(t *testing.T, cancel, block bool) *scripted.Model {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	step := scripted.Step{Func: func(ctx context.Context, msgs []llms.MessageContent) scripted.Step {
		system, turns := scripted.Text(msgs[0]), aiTurns(msgs)
		results := scripted.ToolResults(msgs)
		switch {
		case strings.Contains(system, "You lead.") && turns == 0:
			return scripted.Step{InputTokens: 100, OutputTokens: 20, Calls: []scripted.Call{{Name: "delegate", Args: scripted.JSON(map[string]any{
				"mode": "background", "tasks": []map[string]any{{"label": "a", "type": "helper", "prompt": "say alpha"}, {"label": "b", "type": "helper", "prompt": "say beta"}}})}}}
		case strings.Contains(system, "You lead.") && turns == 1:
			group := groupPattern.FindStringSubmatch(results[0].Content)
			if group == nil {
				return scripted.Step{Text: "no group in " + results[0].Content}
			}
			args := map[string]any{"group": group[1], "wait": 60}
			if cancel {
				args = map[string]any{"group": group[1], "cancel": true}
			}
			return scripted.Step{InputTokens: 200, OutputTokens: 20, Calls: []scripted.Call{{Name: "collect", Args: scripted.JSON(args)}}}
		case strings.Contains(system, "You lead."):
			return scripted.Step{InputTokens: 300, OutputTokens: 30, Text: "summary: " + results[len(results)-1].Content}
		case block:
			select {
			case <-ctx.Done():
			case <-release:
			}
			return scripted.Step{Err: context.Canceled}
		case turns == 0:
			task := scripted.Text(msgs[len(msgs)-1])
			word := task[strings.LastIndex(task, " ")+1:]
			return scripted.Step{InputTokens: 50, OutputTokens: 10, Calls: []scripted.Call{{Name: "echo", Args: scripted.JSON(map[string]string{"text": word})}}}
		default:
			return scripted.Step{InputTokens: 70, OutputTokens: 12, Text: "helper heard " + results[len(results)-1].Content}
		}
	}}
	return scripted.New(step, step, step, step)
}

var groupIDPattern = regexp.MustCompile(`[Gg]roup "?g-[0-9a-f]{8}"?`)

func TestWorkflowCollectsABackgroundGroupAsTheManagerDoes(t *testing.T) {
	want := inProcess(t, backgroundModel(t, false, false), "look into it", agenttypes.Budget{})
	env := testEnv(t, registry(t), backgroundModel(t, false, false))
	got := runWorkflow(t, env, leadInput("look into it"))
	norm := func(s string) string { return normal(groupIDPattern.ReplaceAllString(s, "Group G")) }
	if got.End.State != manager.Completed || norm(got.End.Output) != norm(want.Output) {
		t.Fatalf("workflow: %s (%s) %q\nin process: %s %q", got.End.State, got.End.Error, got.End.Output, want.State, want.Output)
	}
	for _, s := range []string{"helper heard echo:alpha", "helper heard echo:beta"} {
		if !strings.Contains(got.End.Output, s) {
			t.Errorf("the collected results leave out %q: %s", s, got.End.Output)
		}
	}
	if got.Usage != want.Usage || got.Turns != want.Turns || got.ToolCalls != want.ToolCalls {
		t.Errorf("workflow: usage %+v, %d turns, %d tool calls; in process: %+v, %d, %d", got.Usage, got.Turns, got.ToolCalls, want.Usage, want.Turns, want.ToolCalls)
	}
}

func TestWorkflowCollectCancelsABackgroundGroup(t *testing.T) {
	env := testEnv(t, registry(t), backgroundModel(t, true, true))
	got := runWorkflow(t, env, leadInput("look into it"))
	if got.End.State != manager.Completed || strings.Count(got.End.Output, "cancelled") < 2 {
		t.Fatalf("ended %s (%s): %q; want the lead to read both children cancelled", got.End.State, got.End.Error, got.End.Output)
	}
}

// askingModel plays a lead that delegates one task and reports what its
// helper said; a helper that asks its parent which word to echo, then
// echoes it and reports; and the lead's model answering the question.
func askingModel() *scripted.Model {
	step := scripted.Step{Func: func(_ context.Context, msgs []llms.MessageContent) scripted.Step {
		system, turns := scripted.Text(msgs[0]), aiTurns(msgs)
		results := scripted.ToolResults(msgs)
		switch {
		case strings.Contains(system, "subagent asks you a question"):
			return scripted.Step{InputTokens: 40, OutputTokens: 5, Text: "gamma"}
		case strings.Contains(system, "You lead.") && turns == 0:
			return scripted.Step{InputTokens: 100, OutputTokens: 20, Calls: []scripted.Call{{Name: "delegate", Args: scripted.JSON(map[string]any{
				"tasks": []map[string]any{{"label": "a", "type": "helper", "prompt": "ask which word to say"}}})}}}
		case strings.Contains(system, "You lead."):
			return scripted.Step{InputTokens: 300, OutputTokens: 30, Text: "summary: " + results[len(results)-1].Content}
		}
		return askingHelper(turns, results)
	}}
	return scripted.New(step, step, step, step)
}

// askingHelper is the helper of askingModel: it asks its parent which
// word to echo, echoes the answer and reports.
func askingHelper(turns int, results []llms.ToolCallResponse) scripted.Step {
	switch turns {
	case 0:
		return scripted.Step{InputTokens: 50, OutputTokens: 10, Calls: []scripted.Call{{Name: "ask_parent", Args: scripted.JSON(map[string]string{"question": "which word?"})}}}
	case 1:
		return scripted.Step{InputTokens: 60, OutputTokens: 10, Calls: []scripted.Call{{Name: "echo", Args: scripted.JSON(map[string]string{"text": results[len(results)-1].Content})}}}
	}
	return scripted.Step{InputTokens: 70, OutputTokens: 12, Text: "helper heard " + results[len(results)-1].Content}
}

func TestWorkflowAnswersAChildsQuestionAsTheManagerDoes(t *testing.T) {
	want := inProcess(t, askingModel(), "look into it", agenttypes.Budget{})
	env := testEnv(t, registry(t), askingModel())
	got := runWorkflow(t, env, leadInput("look into it"))
	if got.End.State != manager.Completed || normal(got.End.Output) != normal(want.Output) {
		t.Fatalf("workflow: %s (%s) %q\nin process: %s %q", got.End.State, got.End.Error, got.End.Output, want.State, want.Output)
	}
	if !strings.Contains(got.End.Output, "gamma") {
		t.Errorf("the helper did not get its parent's answer: %q", got.End.Output)
	}
	if got.Usage != want.Usage || got.OwnUsage != want.OwnUsage {
		t.Errorf("workflow: usage %+v own %+v; in process: %+v own %+v (the answer is the parent's model call)", got.Usage, got.OwnUsage, want.Usage, want.OwnUsage)
	}
}

func TestWorkflowEndsOnAProvidersBadRequestAsTheManagerDoes(t *testing.T) {
	bad := func() *scripted.Model {
		return scripted.New(scripted.Step{Err: fault.Errorf(fault.InvalidArgument, "the provider refused the request (HTTP 400)")})
	}
	want := inProcess(t, bad(), "look into it", agenttypes.Budget{})
	env := testEnv(t, registry(t), bad())
	got := runWorkflow(t, env, leadInput("look into it"))
	if got.End.State != want.State || got.End.Reason != want.Reason || got.End.Reason != manager.ReasonModelError {
		t.Fatalf("workflow: %s (%s) %s; in process: %s (%s) %s", got.End.State, got.End.Reason, got.End.Error, want.State, want.Reason, want.Error)
	}
}
