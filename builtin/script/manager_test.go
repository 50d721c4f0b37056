package script_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin"
	"github.com/troupe-dev/troupe/builtin/script"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

// hostileHooks are Prompt hook bodies, each hostile in its own way, and
// what the error of the agent that runs one says.
var hostileHooks = []struct{ name, body, want string }{
	{"loop", `for { }`, "ran past the agent's time budget and was stopped"},
	{"recursion", `return recurse(0), nil`, "overflowed its stack"},
	{"alloc", `b := make([]byte, 4<<30); return string(b[len(b)-1:]), nil`, "memory"},
	{"goroutines", `for i := 0; i < 10000; i++ { go func() { select {} }() }; return "", nil`, "goroutines"},
	{"panic", `panic("boom")`, "panicked: boom"},
	{"passwd", `return troupe.ReadFile("/etc/passwd")`, "the Prompt hook refused the task: \"/etc/passwd\": path is outside the root"},
}

// hostileStack is the stack limit of the script hosts that run the
// hostile scripts: room for the good scripts, a sixteenth of the default.
const hostileStack = 4 << 20

func hostileDefinition(name, body string) string {
	src := "package hooks\n\nimport \"troupe\"\n\nfunc recurse(n int) string { return recurse(n+1) + \"x\" }\n\nfunc Prompt(task troupe.Task) (string, error) {\n" + body + "\n}\n"
	// Only the endless loop needs a short time budget to be stopped by;
	// the others get time enough, on a loaded machine, to meet their own
	// limit first.
	budget := "8s"
	if name == "loop" {
		budget = "1s"
	}
	return "name: hostile-" + name + "\ndescription: A hostile script.\nneeds_language_model: true\ntools: [read]\nbudget: {max_time: " + budget + "}\nscript: |\n" + indentBlock(src) + "\n"
}

func indentBlock(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

// scriptedManager loads the hostile definitions and the verdict example
// into a registry whose scripts h runs, and returns a manager whose every
// model is model.
func scriptedManager(t *testing.T, h *script.Host, model *scripted.Model, defs map[string]string) *manager.Manager {
	t.Helper()
	reg := agenttypes.NewRegistry()
	require.NoError(t, builtin.Register(reg))
	reg.SetScriptCompiler(h)
	dir := t.TempDir()
	paths := []string{filepath.Join("..", "..", "examples", "agents", "verdict.yaml")}
	for name, text := range defs {
		p := filepath.Join(dir, name+".yaml")
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		paths = append(paths, p)
	}
	types, diags := agenttypes.LoadFiles(agenttypes.LoadOptions{Registry: reg, TrustScripts: agenttypes.TrustAll}, paths...)
	require.False(t, diags.HasErrors(), diags.String())
	require.NoError(t, reg.SetFileTypes(types))
	mgr, err := manager.New(manager.Config{
		Registry:     reg,
		Models:       manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil }),
		DefaultModel: "scripted",
	})
	require.NoError(t, err)
	return mgr
}

func run(t *testing.T, mgr *manager.Manager, typ, task, dir string) manager.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := mgr.Spawn(ctx, manager.SpawnRequest{Type: typ, Task: task, Dir: dir})
	require.NoError(t, err)
	res, err := a.Wait(ctx)
	require.NoError(t, err)
	return res
}

const approve = "Fine.\n\n```json\n{\"verdict\": \"approve\", \"reasons\": [\"tested\"]}\n```"

// requireVerdictRuns checks that an agent of the good scripted type (the
// verdict example: a Prompt and a Result hook) completes.
func requireVerdictRuns(t *testing.T, mgr *manager.Manager, dir string) {
	t.Helper()
	res := run(t, mgr, "verdict", "review it", dir)
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.Equal(t, map[string]any{"verdict": "approve", "reasons": []any{"tested"}}, res.Data, "the Result hook parsed the verdict")
}

// Through the Go API: each hostile script fails its own agent with
// script_error and a message saying what happened, this process carries
// on, and an agent of a good scripted type then completes.
func TestHostileScriptsFailTheirAgentThroughTheManager(t *testing.T) {
	// A small stack: the recursion then overflows after a small part of
	// the CPU time that filling the default 64 MiB takes (about a second
	// under -race), which a loaded machine stretches past the time budget.
	h := script.New(script.Options{CallTimeout: 12 * time.Second, Child: script.ChildOptions{StackLimit: hostileStack}})
	defer h.Close()
	defs := map[string]string{}
	for _, c := range hostileHooks {
		defs["hostile-"+c.name] = hostileDefinition(c.name, c.body)
	}
	model := scripted.New(scripted.Step{Text: approve})
	mgr := scriptedManager(t, h, model, defs)
	defer mgr.Close(context.Background())
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.go"), []byte("package a\n"), 0o644))

	for _, c := range hostileHooks {
		t.Run(c.name, func(t *testing.T) {
			before := len(model.Requests())
			start := time.Now()
			res := run(t, mgr, "hostile-"+c.name, "go", dir)
			assert.Equal(t, manager.Failed, res.State)
			assert.Equal(t, manager.ReasonScript, res.Reason)
			require.ErrorIs(t, res.Err, agenttypes.ErrScript)
			assert.Contains(t, res.Error, c.want)
			assert.NotContains(t, res.Error+res.Output, "root:x:0", "nothing of /etc/passwd reaches the result")
			assert.Len(t, model.Requests(), before, "the model was never called")
			assert.Less(t, time.Since(start), 15*time.Second, "the agent ends within its budget, not the test's")

			requireVerdictRuns(t, mgr, dir)
		})
	}
}

// In process, the hostile scripts a process can survive (a loop, a panic,
// a read outside the root) fail their agent the same way, and the next
// agent of a good type gets a fresh interpreter.
func TestHostileScriptsInProcessFailTheirAgentThroughTheManager(t *testing.T) {
	h := script.New(script.Options{AllInProcess: true, CallTimeout: 5 * time.Second})
	defer h.Close()
	defs := map[string]string{}
	survivable := map[string]bool{"loop": true, "panic": true, "passwd": true}
	for _, c := range hostileHooks {
		if survivable[c.name] {
			defs["hostile-"+c.name] = hostileDefinition(c.name, c.body)
		}
	}
	model := scripted.New(scripted.Step{Text: approve})
	mgr := scriptedManager(t, h, model, defs)
	defer mgr.Close(context.Background())
	dir := t.TempDir()

	for _, c := range hostileHooks {
		if !survivable[c.name] {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			res := run(t, mgr, "hostile-"+c.name, "go", dir)
			assert.Equal(t, manager.Failed, res.State)
			assert.Equal(t, manager.ReasonScript, res.Reason)
			assert.Contains(t, res.Error, c.want)
			requireVerdictRuns(t, mgr, dir)
		})
	}
}
