package temporal

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin"
	"github.com/troupe-dev/troupe/builtin/workspace"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
	"github.com/troupe-dev/troupe/manager/stepwire"
)

// byTask plays every agent of a tree with one scripted model: each
// conversation follows the steps listed under its task.
func byTask(script map[string][]scripted.Step) *scripted.Model {
	steps := make([]scripted.Step, 12)
	for i := range steps {
		steps[i] = scripted.Step{Func: func(ctx context.Context, msgs []llms.MessageContent) scripted.Step {
			task, turn := scripted.Text(msgs[1]), aiTurns(msgs)
			if s := script[task]; turn < len(s) {
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

func toolCall(name string, args any) scripted.Step {
	return scripted.Step{Calls: []scripted.Call{{Name: name, Args: scripted.JSON(args)}}}
}

func editLine(old, new string) scripted.Step {
	return toolCall("edit", map[string]string{"path": "f.txt", "old_string": old, "new_string": new})
}

const tenLines = "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\nline 10\n"

// editingModel plays a general agent that has two children edit either
// end of f.txt at once, then merges both.
func editingModel() *scripted.Model {
	return byTask(map[string][]scripted.Step{
		"fix both ends": {
			toolCall("delegate", map[string]any{"concurrency": 2, "tasks": []map[string]string{
				{"label": "top", "type": "general", "prompt": "fix the top"},
				{"label": "bottom", "type": "general", "prompt": "fix the bottom"},
			}}),
			toolCall("merge", map[string]string{"agent": "top"}),
			toolCall("merge", map[string]string{"agent": "bottom"}),
			{Text: "merged both"},
		},
		"fix the top":    {editLine("line 1\n", "LINE ONE\n"), {Text: "top fixed"}},
		"fix the bottom": {editLine("line 10\n", "LINE TEN\n"), {Text: "bottom fixed"}},
	})
}

// gitIn runs git in dir for a test's own setup and checks.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com", "GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// editRepo is a repository with f.txt of ten lines, committed.
func editRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte(tenLines), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "add", ".")
	gitIn(t, dir, "commit", "-q", "-m", "start")
	return dir
}

// workspaceWorker is a worker's manager with the builtin types and a
// workspace provider of its own on state.
func workspaceWorker(t *testing.T, model llms.Model, state string) (*manager.Manager, *workspace.Provider) {
	t.Helper()
	reg := agenttypes.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		t.Fatal(err)
	}
	spaces, err := workspace.New(workspace.Config{StateDir: state, ExcludesFile: filepath.Join(state, "no-excludes")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = spaces.Close() })
	m, err := manager.New(manager.Config{
		Logger: slog.New(slog.DiscardHandler), Registry: reg, Workspaces: spaces, DefaultModel: "scripted", MaxDepth: 1,
		Models: manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil }),
	})
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
	return m, spaces
}

// turns runs each step on the next of its workers, so that no two steps
// in a row of an agent run on the same one.
type turns struct {
	mu      sync.Mutex
	next    int
	workers []stepwire.Stepper
	ran     []int // how many steps each ran
}

func (s *turns) pick() stepwire.Stepper {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.next % len(s.workers)
	s.next++
	s.ran[i]++
	return s.workers[i]
}

func (s *turns) Start(ctx context.Context, in stepwire.Input) (stepwire.StartOut, error) {
	return s.pick().Start(ctx, in)
}

func (s *turns) Generate(ctx context.Context, in stepwire.Input) (stepwire.GenerateOut, error) {
	return s.pick().Generate(ctx, in)
}

func (s *turns) Answer(ctx context.Context, in stepwire.Input) (stepwire.AnswerOut, error) {
	return s.pick().Answer(ctx, in)
}

func (s *turns) Tools(ctx context.Context, in stepwire.Input) (stepwire.ToolsOut, error) {
	return s.pick().Tools(ctx, in)
}

func (s *turns) Tree(ctx context.Context, in stepwire.Input) (stepwire.TreeOut, error) {
	return s.pick().Tree(ctx, in)
}

func (s *turns) Question(ctx context.Context, in stepwire.Input) (manager.QuestionAnswer, error) {
	return s.pick().Question(ctx, in)
}

func (s *turns) CloseWorkspace(ctx context.Context, in stepwire.Input) (stepwire.CloseOut, error) {
	return s.pick().CloseWorkspace(ctx, in)
}

// workspaceEnv is the SDK's test environment whose steps go to two
// workers in turn, each with a provider of its own on state.
func workspaceEnv(t *testing.T, repo, state string, model llms.Model) (*testsuite.TestWorkflowEnvironment, *turns, *workspace.Provider) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	m1, p1 := workspaceWorker(t, model, state)
	m2, _ := workspaceWorker(t, model, state)
	steps := &turns{workers: []stepwire.Stepper{stepwire.Local{Manager: m1}, stepwire.Local{Manager: m2}}, ran: make([]int, 2)}
	register(env, &activities{steps: steps, root: repo})
	return env, steps, p1
}

func generalInput(task string) agentInput {
	return agentInput{Agent: manager.StepAgent{ID: "00000000-0000-4000-8000-00000000000b", Run: "00000000-0000-4000-8000-0000000000aa",
		Type: "general", Task: task, Dir: ".", MaxDepth: 1}}
}

func TestWorkflowKeepsAWorkspaceAcrossWorkersThatShareAStateDirectory(t *testing.T) {
	repo, state := editRepo(t), t.TempDir()
	env, steps, spaces := workspaceEnv(t, repo, state, editingModel())
	out := runWorkflow(t, env, generalInput("fix both ends"))
	if out.End.State != manager.Completed {
		t.Fatalf("the run ended %s (%s): %s", out.End.State, out.End.Reason, out.End.Error)
	}
	if steps.ran[0] == 0 || steps.ran[1] == 0 {
		t.Fatalf("steps ran %v on the two workers; want both used", steps.ran)
	}
	ch := out.Changes
	if ch == nil {
		t.Fatal("the run's output carries no changes")
	}
	if len(ch.Modified) != 1 || ch.Modified[0] != "f.txt" {
		t.Errorf("changes modify %v; want [f.txt]", ch.Modified)
	}
	both := strings.Replace(strings.Replace(tenLines, "line 10\n", "LINE TEN\n", 1), "line 1\n", "LINE ONE\n", 1)
	if got := gitIn(t, repo, "show", ch.Head+":f.txt") + "\n"; got != both {
		t.Errorf("the lead's work holds\n%s\nwant both children's edits:\n%s", got, both)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "f.txt")); string(b) != tenLines {
		t.Errorf("the user's tree changed:\n%s", b)
	}
	if got := gitIn(t, repo, "worktree", "list", "--porcelain"); strings.Count(got, "worktree ") != 1 {
		t.Errorf("worktrees are left open after the run:\n%s", got)
	}
	applied, err := spaces.Apply(context.Background(), ch, workspace.ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "f.txt")); string(b) != both || len(applied.Written) != 1 {
		t.Errorf("applying the run wrote %v, and f.txt holds\n%s", applied.Written, b)
	}
}

func TestWorkflowClosesTheWorkspaceOfACancelledRunKeepingItsWork(t *testing.T) {
	repo, state := editRepo(t), t.TempDir()
	block := make(chan struct{})
	model := byTask(map[string][]scripted.Step{
		"edit, then wait": {
			editLine("line 5\n", "LINE FIVE\n"),
			{Func: func(ctx context.Context, _ []llms.MessageContent) scripted.Step {
				select {
				case <-ctx.Done():
				case <-block:
				}
				return scripted.Step{Err: context.Canceled}
			}},
		},
	})
	defer close(block)
	env, _, _ := workspaceEnv(t, repo, state, model)
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Second)
	out := runWorkflow(t, env, generalInput("edit, then wait"))
	if out.End.State != manager.Cancelled {
		t.Fatalf("the run ended %s (%s); want cancelled", out.End.State, out.End.Error)
	}
	if out.Changes == nil || len(out.Changes.Modified) != 1 {
		t.Fatalf("a cancelled run's changes are %+v; want its edit of f.txt kept", out.Changes)
	}
	if got := gitIn(t, repo, "show", out.Changes.Head+":f.txt"); !strings.Contains(got, "LINE FIVE") {
		t.Errorf("the branch holds\n%s\nwant the edit made before the cancel", got)
	}
}

func TestWorkerWhoseWorkspacesCannotBeReopenedRefusesATypeThatChangesFiles(t *testing.T) {
	repo := editRepo(t)
	reg := agenttypes.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		t.Fatal(err)
	}
	var opened bool
	m, err := manager.New(manager.Config{
		Logger: slog.New(slog.DiscardHandler), Registry: reg, DefaultModel: "scripted", MaxDepth: 1,
		Workspaces: workspacesFunc(func(context.Context, agenttypes.WorkspaceRequest) (agenttypes.Workspace, error) {
			opened = true
			return nil, errors.New("not reached")
		}),
		Models: manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return editingModel(), nil }),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	sa := generalInput("fix both ends").Agent
	sa.Dir = repo
	_, err = m.StartStep(context.Background(), sa)
	if !errors.Is(err, agenttypes.ErrWorkspace) || !strings.Contains(err.Error(), "WorkspaceReopener") || !strings.Contains(err.Error(), "shares") {
		t.Fatalf("StartStep: %v; want ErrWorkspace naming what the worker needs", err)
	}
	if opened {
		t.Error("a workspace the other workers could not reopen was opened")
	}
}

// workspacesFunc is a Workspaces that cannot reopen.
type workspacesFunc func(context.Context, agenttypes.WorkspaceRequest) (agenttypes.Workspace, error)

func (f workspacesFunc) Open(ctx context.Context, req agenttypes.WorkspaceRequest) (agenttypes.Workspace, error) {
	return f(ctx, req)
}

// As in process, a child that changes no files works in its parent's
// workspace, and reads what the parent wrote there.
func TestWorkflowChildReadsItsParentsWorkspace(t *testing.T) {
	repo, state := editRepo(t), t.TempDir()
	model := byTask(map[string][]scripted.Step{
		"write notes, then have them read": {
			toolCall("write", map[string]string{"path": "notes.md", "content": "written by the parent\n"}),
			toolCall("delegate", map[string]any{"tasks": []map[string]string{{"label": "reader", "type": "explore", "prompt": "read the notes"}}}),
			{Text: "done"},
		},
		"read the notes": {toolCall("read", map[string]string{"path": "notes.md"}), {Text: "read them"}},
	})
	env, _, _ := workspaceEnv(t, repo, state, model)
	out := runWorkflow(t, env, generalInput("write notes, then have them read"))
	if out.End.State != manager.Completed {
		t.Fatalf("the run ended %s (%s): %s", out.End.State, out.End.Reason, out.End.Error)
	}
	var read string
	for _, r := range model.Requests() {
		if len(r.Messages) > 1 && scripted.Text(r.Messages[1]) == "read the notes" {
			if res := scripted.ToolResults(r.Messages); len(res) > 0 {
				read = res[0].Content
			}
		}
	}
	if !strings.Contains(read, "written by the parent") {
		t.Errorf("the child read %q; want the file its parent wrote in its workspace", read)
	}
}

// A handle comes with a step's input: a step of another run, or of
// another agent, is refused the workspace it names.
func TestStepsRefuseAWorkspaceOfAnotherRunOrAgent(t *testing.T) {
	repo, state := editRepo(t), t.TempDir()
	m, _ := workspaceWorker(t, editingModel(), state)
	sa := generalInput("fix both ends").Agent
	sa.Dir = repo
	st, err := m.StartStep(context.Background(), sa)
	if err != nil || st.Workspace == "" {
		t.Fatalf("StartStep: %v, workspace %q", err, st.Workspace)
	}
	for _, c := range []struct{ what, run, id string }{
		{"another run", "00000000-0000-4000-8000-0000000000bb", sa.ID},
		{"another agent", sa.Run, "00000000-0000-4000-8000-00000000000c"},
	} {
		other := sa
		other.Run, other.ID, other.Workspace = c.run, c.id, st.Workspace
		if _, err := m.CloseWorkspaceStep(context.Background(), other); !errors.Is(err, agenttypes.ErrWorkspace) || !strings.Contains(err.Error(), "not one of agent") {
			t.Errorf("%s: closing the workspace: %v; want it refused", c.what, err)
		}
	}
	sa.Workspace = st.Workspace
	ch, err := m.CloseWorkspaceStep(context.Background(), sa)
	if err != nil || ch == nil {
		t.Fatalf("its own agent's close: %v, changes %v", err, ch)
	}
}
