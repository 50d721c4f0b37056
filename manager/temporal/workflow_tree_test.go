package temporal

import (
	"context"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/manager/scripted"
)

// twoGroupsModel: the lead starts two background groups of two helpers,
// whose model calls block until cancelled, then cancels both and reports
// what its second delegate call said.
func twoGroupsModel(t *testing.T) *scripted.Model {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	step := scripted.Step{Func: func(ctx context.Context, msgs []llms.MessageContent) scripted.Step {
		system, turns := scripted.Text(msgs[0]), aiTurns(msgs)
		results := scripted.ToolResults(msgs)
		bg := scripted.JSON(map[string]any{"mode": "background", "tasks": []map[string]any{
			{"label": "a", "type": "helper", "prompt": "wait"}, {"label": "b", "type": "helper", "prompt": "wait"}}})
		switch {
		case strings.Contains(system, "You lead.") && turns <= 1:
			return scripted.Step{InputTokens: 100, OutputTokens: 20, Calls: []scripted.Call{{Name: "delegate", Args: bg}}}
		case strings.Contains(system, "You lead.") && turns <= 3:
			group := groupPattern.FindStringSubmatch(results[turns-2].Content)
			if group == nil {
				return scripted.Step{Text: "second delegate: " + results[1].Content}
			}
			return scripted.Step{InputTokens: 100, OutputTokens: 20, Calls: []scripted.Call{{Name: "collect", Args: scripted.JSON(map[string]any{"group": group[1], "cancel": true})}}}
		case strings.Contains(system, "You lead."):
			return scripted.Step{Text: "second delegate: " + results[1].Content}
		}
		select {
		case <-ctx.Done():
		case <-release:
		}
		return scripted.Step{Err: context.Canceled}
	}}
	return scripted.New(step, step, step, step, step, step, step, step)
}

// With a tree of at most 3 agents alive, the lead and two children, a
// second background group of two is refused while the first runs.
func TestWorkflowKeepsBackgroundGroupsWithinTheTreesAgents(t *testing.T) {
	env := testEnv(t, registry(t), twoGroupsModel(t))
	in := leadInput("look into it")
	in.Limits.TreeAgents = 3
	got := runWorkflow(t, env, in)
	t.Logf("workflow: %s %s %s %q", got.End.State, got.End.Reason, got.End.Error, got.End.Output)
	if strings.Contains(got.End.Output, "second delegate: Started group") {
		t.Fatalf("a second group of two was started beside the first: 5 agents alive in a tree of at most 3")
	}
}
