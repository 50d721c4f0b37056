package manager_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

// fakeWorkspaces makes each workspace a fresh directory and records what
// was asked of it; Close reports the files written in it as added.
type fakeWorkspaces struct {
	t        *testing.T
	openErr  error
	closeErr error

	mu     sync.Mutex
	opened []agenttypes.WorkspaceRequest
	spaces map[string]*fakeWorkspace // by agent
}

type fakeWorkspace struct {
	f      *fakeWorkspaces
	agent  string
	dir    string
	closed int
}

func (f *fakeWorkspaces) Open(_ context.Context, req agenttypes.WorkspaceRequest) (agenttypes.Workspace, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opened = append(f.opened, req)
	if f.openErr != nil {
		return nil, f.openErr
	}
	if f.spaces == nil {
		f.spaces = map[string]*fakeWorkspace{}
	}
	ws := &fakeWorkspace{f: f, agent: req.Agent, dir: f.t.TempDir()}
	f.spaces[req.Agent] = ws
	return ws, nil
}

func (f *fakeWorkspaces) space(agent string) *fakeWorkspace {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.spaces[agent]
}

func (w *fakeWorkspace) Top() string { return w.dir }

func (w *fakeWorkspace) Dir() string { return w.dir }

func (w *fakeWorkspace) Run(context.Context, agenttypes.Command) (agenttypes.CommandResult, error) {
	return agenttypes.CommandResult{}, agenttypes.ErrRunRefused
}

func (w *fakeWorkspace) Merge(context.Context, *agenttypes.Changes) (agenttypes.MergeResult, error) {
	return agenttypes.MergeResult{}, nil
}

func (w *fakeWorkspace) Close(context.Context) (*agenttypes.Changes, error) {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	w.closed++
	if w.f.closeErr != nil {
		return nil, w.f.closeErr
	}
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return nil, err
	}
	ch := &agenttypes.Changes{Branch: "troupe/run/" + w.agent, Base: "base", Head: "head-" + w.agent}
	for _, e := range entries {
		ch.Added = append(ch.Added, e.Name())
	}
	return ch, nil
}

func (w *fakeWorkspace) closes() int {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	return w.closed
}

// writeTool writes a file named by its argument in the agent's
// workspace, as the real write tool would, and refuses without one.
func writeTool() agenttypes.Tool {
	return &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "write", Description: "writes a file"},
		Func: func(ctx context.Context, args json.RawMessage) (string, error) {
			var in struct{ Path string }
			if err := json.Unmarshal(args, &in); err != nil {
				return "", err
			}
			env := agenttypes.EnvFrom(ctx)
			if env.Workspace == nil || env.Dir != env.Workspace.Dir() {
				return "", errors.New("no workspace")
			}
			return "written", os.WriteFile(filepath.Join(env.Workspace.Dir(), in.Path), []byte("x"), 0o644)
		},
	}
}

// peekTool reports a child's changes, found by label or ID through the
// tree, as the merge tool finds them.
func peekTool() agenttypes.Tool {
	return &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "peek", Description: "a child's changes"},
		Func: func(ctx context.Context, args json.RawMessage) (string, error) {
			var in struct{ Agent string }
			if err := json.Unmarshal(args, &in); err != nil {
				return "", err
			}
			ch, err := agenttypes.EnvFrom(ctx).Tree.ChildChanges(ctx, in.Agent)
			if err != nil {
				return "", err
			}
			return scripted.JSON(ch), nil
		},
	}
}

func writeStep(path string) scripted.Step {
	return scripted.Step{Calls: []scripted.Call{{Name: "write", Args: scripted.JSON(map[string]string{"path": path})}}}
}

// newWorkspaceFixture has a "fixer" type that writes, a "lead" that
// delegates to it and writes too, and a "reader" that does neither.
func newWorkspaceFixture(t *testing.T, script map[string][]scripted.Step, ws *fakeWorkspaces) *treeFixture {
	t.Helper()
	tf := newTreeFixture(t, script, func(c *manager.Config) {
		if ws != nil {
			c.Workspaces = ws
		}
	})
	require.NoError(t, tf.reg.RegisterTool(writeTool()))
	require.NoError(t, tf.reg.RegisterTool(peekTool()))
	require.NoError(t, tf.reg.RegisterType(agenttypes.Type{Name: "fixer", Description: "fixes", Tools: []string{"write", "echo"}}))
	require.NoError(t, tf.reg.RegisterType(agenttypes.Type{Name: "fixlead", Description: "leads fixers", Tools: []string{"write", "peek", "delegate", "collect"}}))
	return tf
}

func TestATypeThatChangesFilesIsNotSpawnedWithoutAWorkspace(t *testing.T) {
	tf := newWorkspaceFixture(t, nil, nil)
	_, err := tf.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "fixer", Task: "fix it"})
	require.ErrorIs(t, err, manager.ErrWorkspace)
	assert.Contains(t, err.Error(), "Config.Workspaces")
	assert.Empty(t, tf.mgr.List(manager.Filter{}), "a refused spawn leaves no agent")

	// A type that only reads needs none.
	a, err := tf.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "worker", Task: "answer now"})
	require.NoError(t, err)
	_, err = a.Wait(context.Background())
	require.NoError(t, err)
}

func TestAWorkspaceThatCannotBeMadeRefusesTheSpawn(t *testing.T) {
	ws := &fakeWorkspaces{t: t, openErr: errors.New("disk full")}
	tf := newWorkspaceFixture(t, nil, ws)
	_, err := tf.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "fixer", Task: "fix it"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "disk full")
	assert.Empty(t, tf.mgr.List(manager.Filter{}))
}

func TestEveryEndRecordsTheWorkspaceAndReturnsItsChanges(t *testing.T) {
	script := map[string][]scripted.Step{
		"complete": {writeStep("done.txt"), {Text: "done"}},
		"fail":     {writeStep("half.txt"), {Err: errors.New("provider down")}},
		"cancel":   {writeStep("partial.txt"), {Block: true}},
	}
	ws := &fakeWorkspaces{t: t}
	tf := newWorkspaceFixture(t, script, ws)
	for task, want := range map[string]struct {
		state manager.State
		file  string
	}{
		"complete": {manager.Completed, "done.txt"},
		"fail":     {manager.Failed, "half.txt"},
		"cancel":   {manager.Cancelled, "partial.txt"},
	} {
		t.Run(task, func(t *testing.T) {
			a, err := tf.mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "fixer", Task: task})
			require.NoError(t, err)
			if task == "cancel" {
				waitForFile(t, filepath.Join(ws.space(a.ID()).Dir(), want.file))
				require.NoError(t, tf.mgr.Cancel(a.ID()))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res, err := a.Wait(ctx)
			require.NoError(t, err)
			assert.Equal(t, want.state, res.State, res.Error)
			require.NotNil(t, res.Changes, "every end returns the changes")
			assert.Equal(t, []string{want.file}, res.Changes.Added)
			assert.Equal(t, 1, ws.space(a.ID()).closes(), "closed exactly once")
			assert.Equal(t, ws.space(a.ID()).Dir(), a.Info().Dir, "the agent works in its workspace")
		})
	}
}

// waitForFile waits for a file an agent writes.
func waitForFile(t *testing.T, path string) {
	t.Helper()
	require.Eventually(t, func() bool { _, err := os.Stat(path); return err == nil }, 10*time.Second, time.Millisecond)
}

func TestAWorkspaceThatCannotBeRecordedFailsTheRunThatCompleted(t *testing.T) {
	ws := &fakeWorkspaces{t: t, closeErr: errors.New("cannot commit")}
	tf := newWorkspaceFixture(t, map[string][]scripted.Step{"complete": {writeStep("a.txt"), {Text: "done"}}}, ws)
	res := tf.run(t, manager.SpawnRequest{Type: "fixer", Task: "complete"})
	assert.Equal(t, manager.Failed, res.State)
	assert.Equal(t, manager.ReasonWorkspace, res.Reason)
	require.ErrorIs(t, res.Err, manager.ErrWorkspace)
	assert.Contains(t, res.Error, "cannot commit")
	assert.Contains(t, res.Error, ws.space(res.ID).Dir(), "says where the work is left")
}

func TestAChildsWorkspaceStartsFromItsParentsAndItsChangesReachTheParent(t *testing.T) {
	script := map[string][]scripted.Step{
		"lead": {
			writeStep("lead.txt"),
			delegateCall(agenttypes.DelegateRequest{Tasks: []agenttypes.ChildTask{{Label: "fix", Type: "fixer", Prompt: "child"}}}),
			{Calls: []scripted.Call{{Name: "peek", Args: `{"agent":"fix"}`}}},
			{Calls: []scripted.Call{{Name: "peek", Args: `{"agent":"nobody"}`}}},
			{Text: "led"},
		},
		"child": {writeStep("child.txt"), {Text: "fixed"}},
	}
	ws := &fakeWorkspaces{t: t}
	tf := newWorkspaceFixture(t, script, ws)
	res := tf.run(t, manager.SpawnRequest{Type: "fixlead", Task: "lead"})
	require.Equal(t, manager.Completed, res.State, res.Error)

	ws.mu.Lock()
	require.Len(t, ws.opened, 2)
	parentReq, childReq := ws.opened[0], ws.opened[1]
	ws.mu.Unlock()
	assert.Nil(t, parentReq.Parent, "a top-level agent starts from its directory")
	assert.Same(t, ws.space(parentReq.Agent), childReq.Parent, "a child starts from its parent's workspace")
	assert.Equal(t, ws.space(parentReq.Agent).Dir(), childReq.Dir)

	reqs := requestsFor(tf.model, "lead")
	require.Len(t, reqs, 5)
	var resp agenttypes.DelegateResponse
	require.NoError(t, json.Unmarshal([]byte(lastResult(reqs[2])), &resp))
	require.Len(t, resp.Results, 1)
	require.NotNil(t, resp.Results[0].Changes, "the parent model reads the child's changes")
	assert.Equal(t, []string{"child.txt"}, resp.Results[0].Changes.Added)
	assert.Equal(t, []string{"lead.txt"}, res.Changes.Added, "each agent's changes are its own")

	var byLabel agenttypes.Changes
	require.NoError(t, json.Unmarshal([]byte(lastResult(reqs[3])), &byLabel), "the tree finds an ended child's changes by label")
	assert.Equal(t, resp.Results[0].Changes.Head, byLabel.Head)
	assert.Contains(t, lastResult(reqs[4]), "no child", "an unknown child is an error the model reads")
}

func lastResult(r scripted.Request) string {
	results := scripted.ToolResults(r.Messages)
	return results[len(results)-1].Content
}

func TestAChildThatMayNotChangeFilesGetsNoWorkspace(t *testing.T) {
	// The lead may not write, so neither may its fixer child: it is
	// given no changing tool, and no workspace.
	script := map[string][]scripted.Step{
		"lead": {
			delegateCall(agenttypes.DelegateRequest{Tasks: []agenttypes.ChildTask{{Label: "fix", Type: "fixer", Prompt: "child"}}}),
			{Text: "led"},
		},
		"child": {writeStep("child.txt"), {Text: "could not write"}},
	}
	ws := &fakeWorkspaces{t: t}
	tf := newWorkspaceFixture(t, script, ws)
	res := tf.run(t, manager.SpawnRequest{Type: "lead", Task: "lead"})
	require.Equal(t, manager.Completed, res.State, res.Error)
	ws.mu.Lock()
	defer ws.mu.Unlock()
	assert.Empty(t, ws.opened, "no workspace for an agent without a changing tool")
	assert.Contains(t, lastToolResult(t, tf.model, "child"), "write", "the child's write is refused")
}
