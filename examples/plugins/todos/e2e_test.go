package main

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
	"github.com/troupe-dev/troupe/plugins"
)

// TestTheExampleRunsThroughTheHost builds this plugin as a user would,
// installs it in a plugin folder, lets troupe's host discover it, and runs
// its todo-triage type through the manager, the scripted model answering
// the loop's model calls.
func TestTheExampleRunsThroughTheHost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin")
	}
	pluginDir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(pluginDir, "troupe-plugin-todos"), ".")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())

	repo := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(repo, "cart.go"), []byte("package cart\n\n// TODO: round half to even\nfunc Total() {}\n"), 0o600))

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	host := plugins.New(plugins.Config{Dirs: []plugins.Dir{{Path: pluginDir}}, Logger: slog.New(slog.DiscardHandler)})
	defer host.Close()
	reg := agenttypes.NewRegistry()
	require.NoError(t, builtin.Register(reg))
	require.Empty(t, host.Load(ctx, reg))
	typ, err := reg.Type("todo-triage")
	require.NoError(t, err)
	assert.Equal(t, "plugin:todos", typ.Source)
	checkWalkSpan(ctx, t, reg, repo)

	model := scripted.New(
		scripted.Step{Text: "looking closer", Calls: []scripted.Call{{Name: "grep", Args: `{"pattern":"Total"}`}}, InputTokens: 120, OutputTokens: 10},
		scripted.Step{Func: func(_ context.Context, msgs []llms.MessageContent) scripted.Step {
			// The loop listed the comments itself and passed the grep.
			task := scripted.Text(msgs[1])
			grep := scripted.ToolResults(msgs)[0].Content
			if strings.Contains(task, "cart.go:3") && strings.Contains(grep, "func Total") {
				return scripted.Step{Text: "1. cart.go:3 — rounding decides every total.", InputTokens: 200, OutputTokens: 15}
			}
			return scripted.Step{Text: "the loop did not pass what it found: " + task + " / " + grep}
		}},
	)
	mgr, err := manager.New(manager.Config{
		Registry: reg, DefaultModel: "scripted", Logger: slog.New(slog.DiscardHandler),
		Models: manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil }),
	})
	require.NoError(t, err)
	defer mgr.Close(ctx)
	sub := mgr.Subscribe()
	a, err := mgr.Spawn(ctx, manager.SpawnRequest{Type: "todo-triage", Task: "which TODO first?", Dir: repo})
	require.NoError(t, err)
	res, err := a.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, manager.Completed, res.State, "%v", res.Err)
	assert.Equal(t, "1. cart.go:3 — rounding decides every total.", res.Output)
	assert.Equal(t, manager.Usage{InputTokens: 320, OutputTokens: 25}, res.Usage, "the plugin's model calls are the host's, counted")
	assert.Equal(t, 2, res.ToolCalls, "todos and grep, through the host")
	require.NoError(t, mgr.Close(ctx))
	var kinds []manager.EventKind
	for e := range sub.C() {
		kinds = append(kinds, e.Kind)
	}
	assert.Contains(t, kinds, manager.EventProgress, "the loop's progress is an event")
	assert.Contains(t, kinds, manager.EventToolCall)
}

// checkWalkSpan calls the todos tool within a span, as the manager does
// with a TracerProvider, and finds the plugin's span of its walk in the
// host's exporter, under that span, counting what it found.
func checkWalkSpan(ctx context.Context, t *testing.T, reg *agenttypes.Registry, repo string) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(ctx)
	tool, err := reg.Tool("todos")
	require.NoError(t, err)
	ctx, call := tp.Tracer("test").Start(agenttypes.WithEnv(ctx, &agenttypes.Env{AgentID: "a", Dir: repo}), "execute_tool todos")
	_, err = tool.Call(ctx, []byte(`{}`))
	call.End()
	require.NoError(t, err)
	var walk sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "todos walk" {
			walk = s
		}
	}
	require.NotNil(t, walk, "the plugin's span reached the host")
	assert.Equal(t, call.SpanContext().TraceID(), walk.SpanContext().TraceID())
	assert.Equal(t, call.SpanContext().SpanID(), walk.Parent().SpanID())
	assert.Contains(t, walk.Attributes(), attribute.Int("todos.found", 1))
}
