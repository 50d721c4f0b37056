package builtin_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
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

// byTask plays every agent of a tree with one scripted model: each
// conversation follows the steps listed under its task.
func byTask(script map[string][]scripted.Step) *scripted.Model {
	steps := make([]scripted.Step, 10)
	for turn := range steps {
		steps[turn] = scripted.Step{Func: func(ctx context.Context, msgs []llms.MessageContent) scripted.Step {
			var task string
			for _, m := range msgs {
				if m.Role == llms.ChatMessageTypeHuman {
					task = scripted.Text(m)
					break
				}
			}
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

func call(name string, args any) scripted.Step {
	return scripted.Step{Calls: []scripted.Call{{Name: name, Args: scripted.JSON(args)}}}
}

func editCall(old, new string) scripted.Step {
	return call("edit", map[string]string{"path": "f.txt", "old_string": old, "new_string": new})
}

// git runs git in dir for a test's own setup and checks.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com", "GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	return strings.TrimSpace(string(out))
}

const tenLines = "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\nline 10\n"

// userRepo is a repository with f.txt of ten lines, committed.
func userRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	for name, content := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-q", "-m", "start")
	return dir
}

// workspaceManager is a manager with the builtin types and tools, whose
// agents get workspaces in which commands may run.
func workspaceManager(t *testing.T, model *scripted.Model, cacheDir string, types ...agenttypes.Type) *manager.Manager {
	mgr, _ := workspaceManagerAndProvider(t, model, cacheDir, types...)
	return mgr
}

func workspaceManagerAndProvider(t *testing.T, model *scripted.Model, cacheDir string, types ...agenttypes.Type) (*manager.Manager, *workspace.Provider) {
	t.Helper()
	reg := agenttypes.NewRegistry()
	require.NoError(t, builtin.Register(reg))
	for _, typ := range types {
		require.NoError(t, reg.RegisterType(typ))
	}
	state := t.TempDir()
	spaces, err := workspace.New(workspace.Config{
		StateDir: state, ExcludesFile: filepath.Join(state, "no-excludes"),
		AllowRun: func(string) error { return nil }, CacheDir: cacheDir,
	})
	require.NoError(t, err)
	t.Cleanup(func() { spaces.Close() })
	mgr, err := manager.New(manager.Config{
		Registry: reg, Workspaces: spaces, DefaultModel: "scripted",
		Models: manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil }),
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, mgr.Close(context.Background())) })
	return mgr, spaces
}

func runAgent(t *testing.T, mgr *manager.Manager, req manager.SpawnRequest) manager.Result {
	t.Helper()
	a, err := mgr.Spawn(context.Background(), req)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := a.Wait(ctx)
	require.NoError(t, err)
	return res
}

// toolResults are the tool results the conversation of task was sent,
// in order.
func toolResults(model *scripted.Model, task string) []string {
	var out []string
	for _, r := range model.Requests() {
		if len(r.Messages) > 1 && scripted.Text(r.Messages[1]) == task {
			out = out[:0]
			for _, res := range scripted.ToolResults(r.Messages) {
				out = append(out, res.Content)
			}
		}
	}
	return out
}

func showAt(t *testing.T, repo string, ch *agenttypes.Changes, path string) string {
	t.Helper()
	return git(t, repo, "show", ch.Head+":"+path)
}

func twoChildren(top, bottom string) scripted.Step {
	return call("delegate", map[string]any{"concurrency": 2, "return": "json", "tasks": []map[string]string{
		{"label": "top", "type": "general", "prompt": top},
		{"label": "bottom", "type": "general", "prompt": bottom},
	}})
}

func TestChildrenEditOneFileInParallelAndTheParentMergesBoth(t *testing.T) {
	repo := userRepo(t, map[string]string{"f.txt": tenLines})
	model := byTask(map[string][]scripted.Step{
		"fix both ends": {
			twoChildren("fix the top", "fix the bottom"),
			call("merge", map[string]string{"agent": "top"}),
			call("merge", map[string]string{"agent": "bottom"}),
			{Text: "merged both"},
		},
		"fix the top":    {editCall("line 1\n", "LINE ONE\n"), {Text: "top fixed"}},
		"fix the bottom": {editCall("line 10\n", "LINE TEN\n"), {Text: "bottom fixed"}},
	})
	mgr, spaces := workspaceManagerAndProvider(t, model, "")
	res := runAgent(t, mgr, manager.SpawnRequest{Type: "general", Task: "fix both ends", Dir: repo})
	require.Equal(t, manager.Completed, res.State, res.Error)

	var delegated agenttypes.DelegateResponse
	results := toolResults(model, "fix both ends")
	require.Len(t, results, 3)
	require.NoError(t, json.Unmarshal([]byte(results[0]), &delegated))
	for _, c := range delegated.Results {
		require.NotNil(t, c.Changes, "child %s's result carries its changes", c.Label)
		assert.Equal(t, []string{"f.txt"}, c.Changes.Modified, c.Label)
	}
	assert.Contains(t, results[1], "f.txt")
	assert.Contains(t, results[2], "f.txt")

	assert.Equal(t, tenLines, readFile(t, repo, "f.txt"), "the user's tree is untouched")
	assert.Empty(t, git(t, repo, "status", "--porcelain"))
	require.NotNil(t, res.Changes)
	assert.Equal(t, []string{"f.txt"}, res.Changes.Modified)
	both := strings.Replace(strings.Replace(tenLines, "line 10\n", "LINE TEN\n", 1), "line 1\n", "LINE ONE\n", 1)
	assert.Equal(t, both, showAt(t, repo, res.Changes, "f.txt")+"\n", "the parent's work holds both children's edits")

	applied, err := spaces.Apply(context.Background(), res.Changes, workspace.ApplyOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"f.txt"}, applied.Written)
	assert.Equal(t, both, readFile(t, repo, "f.txt"), "applying the parent's run brings both edits into the tree")
}

func TestASecondMergeThatConflictsChangesNothing(t *testing.T) {
	repo := userRepo(t, map[string]string{"f.txt": tenLines})
	model := byTask(map[string][]scripted.Step{
		"fix the middle": {
			twoChildren("middle one way", "middle another way"),
			call("merge", map[string]string{"agent": "top"}),
			call("merge", map[string]string{"agent": "bottom"}),
			{Text: "one merged"},
		},
		"middle one way":     {editCall("line 5\n", "FIVE A\n"), {Text: "done"}},
		"middle another way": {editCall("line 5\n", "FIVE B\n"), {Text: "done"}},
	})
	mgr := workspaceManager(t, model, "")
	res := runAgent(t, mgr, manager.SpawnRequest{Type: "general", Task: "fix the middle", Dir: repo})
	require.Equal(t, manager.Completed, res.State, res.Error)
	results := toolResults(model, "fix the middle")
	require.Len(t, results, 3)
	assert.Contains(t, results[2], "conflict")
	assert.Contains(t, results[2], "f.txt")
	assert.Contains(t, results[2], "FIVE B", "the conflicting hunk is shown")
	assert.Contains(t, showAt(t, repo, res.Changes, "f.txt"), "FIVE A", "the first merge holds")
	assert.NotContains(t, showAt(t, repo, res.Changes, "f.txt"), "FIVE B")
	assert.NotContains(t, showAt(t, repo, res.Changes, "f.txt"), "<<<<<<<", "a conflict leaves no markers behind")
	assert.Equal(t, tenLines, readFile(t, repo, "f.txt"))
}

func TestAFailingTestOfAChildsChangesReachesItsModel(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command")
	}
	repo := userRepo(t, map[string]string{
		"go.mod":     "module example.com/m\n\ngo 1.22\n",
		"m.go":       "package m\n\nfunc Answer() int { return 42 }\n",
		"m_test.go":  "package m\n\nimport \"testing\"\n\nfunc TestAnswer(t *testing.T) {\n\tif Answer() != 42 {\n\t\tt.Fatal(\"wrong answer\")\n\t}\n}\n",
		".gitignore": "",
	})
	model := byTask(map[string][]scripted.Step{
		"break it": {
			call("edit", map[string]string{"path": "m.go", "old_string": "return 42", "new_string": "return 41"}),
			call("run", map[string]string{"command": "go test ./..."}),
			{Text: "it fails"},
		},
	})
	// The build cache of this test's own go command: a cold one would
	// compile the standard library first.
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	require.NoError(t, err)
	mgr := workspaceManager(t, model, filepath.Dir(strings.TrimSpace(string(out))))
	res := runAgent(t, mgr, manager.SpawnRequest{Type: "general", Task: "break it", Dir: repo})
	require.Equal(t, manager.Completed, res.State, res.Error)
	results := toolResults(model, "break it")
	require.Len(t, results, 2)
	assert.Contains(t, results[1], "exit status 1", "the command's status")
	assert.Contains(t, results[1], "wrong answer", "the tail of its output")
	assert.Contains(t, results[1], "FAIL")
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	require.NoError(t, err)
	return string(data)
}
