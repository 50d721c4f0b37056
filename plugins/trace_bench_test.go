package plugins_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/plugins"
)

// BenchmarkTracedBoundary: BenchmarkBoundary's calls made within a
// recorded span, as the manager makes them with a TracerProvider, beside
// the same calls without one, in one run. plugin-tool-spans is a tool
// that makes two spans of its own, which come back and are recorded.
// Read it beside BenchmarkBoundary: a call without a span must cost what
// it did before trace context crossed the boundary.
func BenchmarkTracedBoundary(b *testing.B) {
	h, _ := newHost(b, plugins.Config{}, pluginDir(b, "test"))
	reg := agenttypes.NewRegistry()
	if problems := h.Load(context.Background(), reg); len(problems) > 0 {
		b.Fatal(problems)
	}
	pid, _ := reg.Tool("pid")
	spans, _ := reg.Tool("traced")
	hooks := scriptHooks(b)
	// Spans are recorded, and dropped as they end: the cost measured is
	// the boundary's, not an exporter's.
	tp := sdktrace.NewTracerProvider()
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	plain := agenttypes.WithEnv(context.Background(), &agenttypes.Env{AgentID: "bench", Dir: b.TempDir()})
	traced, span := tp.Tracer("bench").Start(plain, "execute_tool")
	defer span.End()
	tool := func(t agenttypes.Tool, ctx context.Context) func() {
		return func() {
			if _, err := t.Call(ctx, []byte(`{}`)); err != nil {
				b.Fatal(err)
			}
		}
	}
	hook := func(ctx context.Context) func() {
		return func() {
			if _, err := hooks.Prompt(ctx, agenttypes.ScriptTask{Prompt: "abc"}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("plugin-tool", func(b *testing.B) { percentiles(b, tool(pid, plain)) })
	b.Run("plugin-tool-traced", func(b *testing.B) { percentiles(b, tool(pid, traced)) })
	b.Run("plugin-tool-spans", func(b *testing.B) { percentiles(b, tool(spans, traced)) })
	b.Run("script-hook", func(b *testing.B) { percentiles(b, hook(plain)) })
	b.Run("script-hook-traced", func(b *testing.B) { percentiles(b, hook(traced)) })
}
