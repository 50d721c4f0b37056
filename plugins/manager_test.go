package plugins_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
	"github.com/troupe-dev/troupe/plugins"
)

func echoTool() agenttypes.Tool {
	return &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "echo", Description: "Echoes text.", Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
		Func: func(_ context.Context, args json.RawMessage) (string, error) {
			var a struct{ Text string }
			if err := json.Unmarshal(args, &a); err != nil {
				return "", err
			}
			return a.Text, nil
		},
	}
}

// withManager returns a manager over a registry with the echo tool, the
// extra types and the plugins of h, answering model calls with model.
func withManager(t *testing.T, h *plugins.Host, model *scripted.Model, extra ...agenttypes.Type) *manager.Manager {
	t.Helper()
	reg := agenttypes.NewRegistry()
	require.NoError(t, reg.RegisterTool(echoTool()))
	for _, typ := range extra {
		require.NoError(t, reg.RegisterType(typ))
	}
	require.Empty(t, h.Load(ctxTimeout(t, 20*time.Second), reg))
	mgr, err := manager.New(manager.Config{
		Registry:     reg,
		Models:       manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil }),
		DefaultModel: "scripted",
		Logger:       slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, mgr.Close(ctxTimeout(t, 10*time.Second))) })
	return mgr
}

func run(t *testing.T, mgr *manager.Manager, req manager.SpawnRequest) manager.Result {
	t.Helper()
	if req.Dir == "" {
		req.Dir = t.TempDir()
	}
	a, err := mgr.Spawn(ctxTimeout(t, 10*time.Second), req)
	require.NoError(t, err)
	res, err := mgr.Wait(ctxTimeout(t, 20*time.Second), a.ID())
	require.NoError(t, err)
	return res
}

// Both ways a loop's calls reach the host: the lane, and go-plugin's
// broker, which a plugin older than the lane calls it through.
func TestAPluginsOwnLoopRunsThroughTheManagersAccounting(t *testing.T) {
	for _, lane := range []bool{true, false} {
		t.Run(fmt.Sprintf("lane=%v", lane), func(t *testing.T) {
			var env []string
			if !lane {
				env = []string{"TESTPLUGIN_NO_LANE=1"}
			}
			h, _ := newHost(t, plugins.Config{Env: env}, pluginDir(t, "test"))
			loopRunsThroughTheManagersAccounting(t, h)
			assert.Equal(t, lane, plugins.UsesLane(h, "test"))
		})
	}
}

func loopRunsThroughTheManagersAccounting(t *testing.T, h *plugins.Host) {
	model := scripted.New(
		scripted.Step{Text: "calling", Calls: []scripted.Call{{Name: "echo", Args: `{"text":"hi"}`}, {Name: "shout", Args: `{"text":"yo"}`}}, InputTokens: 30, OutputTokens: 5},
		scripted.Step{Text: "the plugin's answer", InputTokens: 50, OutputTokens: 7},
	)
	mgr := withManager(t, h, model)
	sub := mgr.Subscribe()
	defer sub.Close()

	res := run(t, mgr, manager.SpawnRequest{Type: "looper", Task: "do it the plugin's way"})
	require.Equal(t, manager.Completed, res.State, "%v", res.Err)
	assert.Equal(t, manager.ReasonDone, res.Reason)
	assert.Equal(t, "the plugin's answer", res.Output)
	assert.Equal(t, 80, res.Usage.InputTokens)
	assert.Equal(t, 12, res.Usage.OutputTokens)
	assert.Equal(t, 2, res.ToolCalls)
	assert.Equal(t, 2, res.Turns)

	reqs := model.Requests()
	require.Len(t, reqs, 2)
	results := scripted.ToolResults(reqs[1].Messages)
	require.Len(t, results, 2)
	assert.Equal(t, "hi", results[0].Content, "a builtin tool, called back through the host")
	assert.Equal(t, "YO from "+res.ID, results[1].Content, "the plugin's own tool, through the host")
	assert.Equal(t, "plugin loop with 2 tools", scripted.Text(reqs[0].Messages[0]))

	var kinds []string
	var note string
	deadline := time.After(5 * time.Second)
	for done := false; !done; {
		select {
		case e := <-sub.C():
			if e.AgentID != res.ID {
				continue
			}
			kinds = append(kinds, string(e.Kind)+":"+e.Tool)
			if e.Kind == manager.EventNote {
				note = e.Text
			}
			done = e.Kind == manager.EventCompleted
		case <-deadline:
			t.Fatalf("no completed event; got %v", kinds)
		}
	}
	assert.Equal(t, "noted by the plugin", note)
	for _, want := range []string{"model_call:", "tool_call:echo", "tool_call:shout", "note:", "completed:"} {
		assert.Contains(t, kinds, want)
	}
}

func TestAPluginLoopMeetsTheHostsBudgets(t *testing.T) {
	h, _ := newHost(t, plugins.Config{}, pluginDir(t, "test"))
	model := scripted.New(
		scripted.Step{Calls: []scripted.Call{{Name: "echo", Args: `{"text":"1"}`}, {Name: "echo", Args: `{"text":"2"}`}}, InputTokens: 10, OutputTokens: 5},
		scripted.Step{Text: "never reached"},
	)
	mgr := withManager(t, h, model)
	res := run(t, mgr, manager.SpawnRequest{Type: "looper", Task: "t", Budget: agenttypes.Budget{MaxToolCalls: 1}})
	assert.Equal(t, manager.Failed, res.State)
	assert.Equal(t, manager.ReasonBudgetToolCalls, res.Reason, "the refusal crossed to the plugin and back: %v", res.Err)
	assert.ErrorIs(t, res.Err, agenttypes.ErrBudgetExceeded)
	assert.Equal(t, 1, res.ToolCalls)
}

func TestAPluginKilledMidRunFailsOnlyItsAgents(t *testing.T) {
	h, _ := newHost(t, plugins.Config{}, pluginDir(t, "test"))
	release := make(chan struct{})
	steady := agenttypes.Type{Name: "steady", Description: "an in-process loop", Loop: agenttypes.LoopFunc(func(ctx context.Context, _ agenttypes.Session, _ string) (string, error) {
		select {
		case <-release:
			return "steady done", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})}
	mgr := withManager(t, h, scripted.New(scripted.Step{Text: "after the restart"}), steady)
	pid := h.PID("test")

	dir := t.TempDir()
	marker, marker2 := newFIFO(t, "waiting"), newFIFO(t, "waiting2")
	ctx := ctxTimeout(t, 20*time.Second)
	w1, err := mgr.Spawn(ctx, manager.SpawnRequest{Type: "waiter", Task: marker.path, Dir: dir})
	require.NoError(t, err)
	w2, err := mgr.Spawn(ctx, manager.SpawnRequest{Type: "waiter", Task: marker2.path, Dir: dir})
	require.NoError(t, err)
	other, err := mgr.Spawn(ctx, manager.SpawnRequest{Type: "steady", Task: "t", Dir: dir})
	require.NoError(t, err)
	marker.pid(t, 10*time.Second)
	marker2.pid(t, 10*time.Second)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))

	for _, w := range []*manager.Agent{w1, w2} {
		res, err := mgr.Wait(ctx, w.ID())
		require.NoError(t, err)
		assert.Equal(t, manager.Failed, res.State)
		assert.Equal(t, manager.ReasonPluginExited, res.Reason)
		require.ErrorIs(t, res.Err, manager.ErrPluginExited)
		assert.Contains(t, res.Err.Error(), "signal: killed")
	}
	info, err := mgr.Agent(other.ID())
	require.NoError(t, err)
	assert.Equal(t, manager.Running, info.Info().State, "an agent that does not use the plugin runs on")
	close(release)
	res, err := mgr.Wait(ctx, other.ID())
	require.NoError(t, err)
	assert.Equal(t, manager.Completed, res.State)

	res = run(t, mgr, manager.SpawnRequest{Type: "looper", Task: "again"})
	require.Equal(t, manager.Completed, res.State, "%v", res.Err)
	assert.Equal(t, "after the restart", res.Output)
	assert.NotEqual(t, pid, h.PID("test"))
	assert.False(t, slices.Contains(running(testPlugin), pid))
}

// A plugin tool called from the manager's own loop: its process dying
// ends the agent with plugin_exited, since the model cannot work around
// the tool's host going away.
func TestAPluginToolKilledMidCallEndsItsAgent(t *testing.T) {
	h, _ := newHost(t, plugins.Config{}, pluginDir(t, "test"))
	dir := t.TempDir()
	marker := newFIFO(t, "called")
	model := scripted.New(
		scripted.Step{Text: "calling the plugin", Calls: []scripted.Call{{Name: "block", Args: `{"marker":"` + marker.path + `"}`}}},
		scripted.Step{Text: "never reached"},
	)
	caller := agenttypes.Type{Name: "caller", Description: "calls a plugin tool", Tools: []string{"block", "echo"}}
	mgr := withManager(t, h, model, caller)
	pid := h.PID("test")
	ctx := ctxTimeout(t, 20*time.Second)
	a, err := mgr.Spawn(ctx, manager.SpawnRequest{Type: "caller", Task: "call it", Dir: dir})
	require.NoError(t, err)
	marker.pid(t, 10*time.Second)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	res, err := a.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, manager.Failed, res.State)
	assert.Equal(t, manager.ReasonPluginExited, res.Reason)
	require.ErrorIs(t, res.Err, manager.ErrPluginExited)
	assert.Equal(t, "calling the plugin", res.Output, "the partial output is kept")
	assert.Len(t, model.Requests(), 1, "the model is not asked to work around a dead plugin")
}

// A plugin's own loop asks the agent's parent through the host; the
// question reaches the parent's handler with its suggestions, and the
// answer comes back across the boundary. With no parent, the refusal
// keeps its meaning (errors.Is) on the way back.
func TestAPluginLoopAsksItsParent(t *testing.T) {
	h, _ := newHost(t, plugins.Config{}, pluginDir(t, "test"))
	mgr := withManager(t, h, scripted.New(scripted.Step{Block: true}),
		agenttypes.Type{Name: "lead", Description: "waits for its children"})
	var asked agenttypes.Question
	parent, err := mgr.Spawn(ctxTimeout(t, 10*time.Second), manager.SpawnRequest{Type: "lead", Task: "lead", Dir: t.TempDir(),
		OnQuestion: func(_ context.Context, q manager.QuestionInfo) (agenttypes.Answer, error) {
			asked = q.Question
			return agenttypes.Answer{Text: "prioritise OAuth"}, nil
		}})
	require.NoError(t, err)
	res := run(t, mgr, manager.SpawnRequest{Type: "asker", Task: "which auth scheme first?", ParentID: parent.ID()})
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.Equal(t, "handler: prioritise OAuth", res.Output)
	assert.Equal(t, agenttypes.Question{Text: "which auth scheme first?", Suggestions: []string{"OAuth", "API keys"}}, asked)
	parent.Cancel()

	orphan := run(t, mgr, manager.SpawnRequest{Type: "asker", Task: "anyone?"})
	assert.Equal(t, manager.Failed, orphan.State)
	assert.ErrorIs(t, orphan.Err, agenttypes.ErrNoParent, orphan.Error)
}
