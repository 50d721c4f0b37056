package builtin_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin"
	"github.com/troupe-dev/troupe/builtin/workspace"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

// childModel answers as a child: a question to its parent when its task
// says ASK, a 30 KiB report when it says LONG, else a short report that
// says whether its context file reached it.
func childModel() *scripted.Model {
	first := func(msgs []llms.MessageContent) string {
		for _, m := range msgs {
			if m.Role == llms.ChatMessageTypeHuman {
				return scripted.Text(m)
			}
		}
		return ""
	}
	return scripted.New(
		scripted.Step{Func: func(_ context.Context, msgs []llms.MessageContent) scripted.Step {
			task := first(msgs)
			switch {
			case strings.Contains(task, "ASK"):
				return scripted.Step{Calls: []scripted.Call{{Name: "ask_parent", Args: `{"question":"Two schemes: which first?","suggestions":["cookies","tokens"]}`}}}
			case strings.Contains(task, "LONG"):
				return scripted.Step{Text: strings.Repeat("a long line of a long report\n", 30<<10/29)}
			}
			return scripted.Step{Text: "auth report; context seen: " + boolText(strings.Contains(task, `<file path="cart/cart.go">`))}
		}},
		scripted.Step{Func: func(_ context.Context, msgs []llms.MessageContent) scripted.Step {
			res := scripted.ToolResults(msgs)
			return scripted.Step{Text: "prioritised as told: " + res[len(res)-1].Content}
		}},
	)
}

func boolText(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func treeManager(t *testing.T, parent, child *scripted.Model) *manager.Manager {
	t.Helper()
	reg := agenttypes.NewRegistry()
	require.NoError(t, builtin.Register(reg))
	models := manager.ModelResolverFunc(func(_ context.Context, name string) (llms.Model, error) {
		if name == "scripted:child" {
			return child, nil
		}
		return parent, nil
	})
	state := t.TempDir()
	spaces, err := workspace.New(workspace.Config{StateDir: state, ExcludesFile: filepath.Join(state, "no-excludes")})
	require.NoError(t, err)
	t.Cleanup(func() { spaces.Close() })
	mgr, err := manager.New(manager.Config{
		Workspaces: spaces,
		Registry:   reg, Models: models, DefaultModel: "scripted:parent",
		OnQuestion: func(context.Context, manager.QuestionInfo) (agenttypes.Answer, error) {
			return agenttypes.Answer{Text: "cookies first"}, nil
		},
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, mgr.Close(context.Background())) })
	return mgr
}

// shopCopy is a copy of the shop, outside any repository: a general
// agent changes files, in a workspace of its own made from it.
func shopCopy(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(shop)))
	return dir
}

// lastToolResult is the last tool result the parent's model was sent.
func lastToolResult(t *testing.T, m *scripted.Model) string {
	t.Helper()
	reqs := m.Requests()
	require.NotEmpty(t, reqs)
	res := scripted.ToolResults(reqs[len(reqs)-1].Messages)
	require.NotEmpty(t, res)
	return res[len(res)-1].Content
}

// A general agent delegates three tasks through the real manager; the
// result its model reads has them in task order, with the context file,
// the answer to a child's question and a cut report's marker in place.
func TestDelegateEndToEnd(t *testing.T) {
	parent := scripted.New(
		scripted.Step{Calls: []scripted.Call{{Name: "delegate", Args: `{"tasks":[
			{"label":"auth","prompt":"Which auth schemes exist?","context":["cart/cart.go"],"model":"scripted:child"},
			{"label":"ask","prompt":"ASK which scheme first","model":"scripted:child"},
			{"label":"long","prompt":"LONG","model":"scripted:child","max_tool_calls":5}]}`}}},
		scripted.Step{Text: "merged"},
	)
	child := childModel()
	mgr := treeManager(t, parent, child)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := mgr.Spawn(ctx, manager.SpawnRequest{Type: "general", Task: "look into auth", Dir: shopCopy(t)})
	require.NoError(t, err)
	res, err := a.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, manager.Completed, res.State, res.Error)

	out := lastToolResult(t, parent)
	assert.True(t, strings.HasPrefix(out, "# Subagents complete: 3/3\n"), out[:min(len(out), 300)])
	heads := regexp.MustCompile(`(?m)^## \[(\w+)\] ok — explore, model scripted:child, `).FindAllStringSubmatch(out, -1)
	require.Len(t, heads, 3, out[:min(len(out), 2000)])
	assert.Equal(t, []string{"auth", "ask", "long"}, []string{heads[0][1], heads[1][1], heads[2][1]}, "task order")
	assert.Contains(t, out, "auth report; context seen: yes")
	assert.Contains(t, out, "prioritised as told: Answer from your parent: cookies first")

	m := regexp.MustCompile("\\[report cut at 24 KiB of 30 KiB\\. The full report is the result of agent (\\S+): `troupe runs show ").FindStringSubmatch(out)
	require.NotNil(t, m, "the long report is cut, visibly")
	full, err := mgr.Wait(ctx, m[1])
	require.NoError(t, err, "the marker names a real agent")
	assert.Len(t, full.Output, 30<<10/29*29, "whose result holds the whole report")
	assert.Less(t, len(out), 32<<10)

	for _, req := range child.Requests() {
		assert.Contains(t, req.Tools, "ask_parent", "children may ask their parent")
		assert.NotContains(t, req.Tools, "delegate", "children at the depth limit are not offered delegate")
		assert.NotContains(t, req.Tools, "collect")
	}
	assert.Contains(t, parent.Requests()[0].Tools, "delegate")
	assert.NotContains(t, parent.Requests()[0].Tools, "ask_parent", "a top-level agent has no parent to ask")
}

// A background group: delegate returns its ID at once, and collect waits
// for the results.
func TestDelegateBackgroundEndToEnd(t *testing.T) {
	parent := scripted.New(
		scripted.Step{Calls: []scripted.Call{{Name: "delegate", Args: `{"mode":"background","return":"json","tasks":[
			{"label":"one","prompt":"first","model":"scripted:child"},
			{"label":"two","prompt":"second","model":"scripted:child"}]}`}}},
		scripted.Step{Func: func(_ context.Context, msgs []llms.MessageContent) scripted.Step {
			var started struct{ Group string }
			res := scripted.ToolResults(msgs)
			if err := json.Unmarshal([]byte(res[len(res)-1].Content), &started); err != nil {
				return scripted.Step{Text: "could not read the group: " + err.Error()}
			}
			return scripted.Step{Calls: []scripted.Call{{Name: "collect", Args: `{"group":"` + started.Group + `","wait":20,"return":"json"}`}}}
		}},
		scripted.Step{Text: "collected"},
	)
	mgr := treeManager(t, parent, childModel())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := mgr.Spawn(ctx, manager.SpawnRequest{Type: "general", Task: "two things", Dir: shopCopy(t)})
	require.NoError(t, err)
	res, err := a.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, manager.Completed, res.State, res.Error)
	require.Equal(t, "collected", res.Output)

	started := scripted.ToolResults(parent.Requests()[1].Messages)
	assert.Regexp(t, `^\{\n  "group": "[^"]+",\n  "tasks": \[\n    \{\n      "label": "one",`, started[len(started)-1].Content)

	var got struct {
		Done      bool
		Completed int
		Total     int
		Results   []struct{ Label, Status, Report string }
	}
	require.NoError(t, json.Unmarshal([]byte(lastToolResult(t, parent)), &got))
	assert.True(t, got.Done)
	assert.Equal(t, 2, got.Completed)
	assert.Equal(t, 2, got.Total)
	require.Len(t, got.Results, 2)
	assert.Equal(t, "one", got.Results[0].Label)
	assert.Equal(t, "auth report; context seen: no", got.Results[1].Report)
}
