package plugins_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/plugins"
)

// Where plugins are looked for, highest precedence first.
func ExampleDirs() {
	env := map[string]string{"TROUPE_PLUGIN_PATH": "/opt/troupe-plugins", "XDG_DATA_HOME": "/home/ada/.local/share"}
	for _, d := range plugins.Dirs("/src/shop", func(k string) string { return env[k] }) {
		fmt.Println(d.Layer, d.Path)
	}
	// Output:
	// project /src/shop/.troupe/plugins
	// path /opt/troupe-plugins
	// user /home/ada/.local/share/troupe/plugins
}

// A host loads the plugins into a registry, and stops them on Close.
func ExampleHost() {
	h := plugins.New(plugins.Config{Dirs: plugins.Dirs(".", os.Getenv), LockFile: plugins.LockPath(".")})
	defer h.Close()
	// problems := h.Load(ctx, reg): the plugins' types and tools are now in reg.
}

// A plugin's spans join the caller's trace. A tool called within a span
// (the manager's execute_tool span, when it has a TracerProvider) sends
// the plugin that span's context; the spans the plugin makes under it
// with otel.Tracer come back with the answer, and are recorded under it
// by the same provider. The plugin never learns where they go.
func ExampleHost_tracing() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	h := plugins.New(plugins.Config{
		Dirs:   []plugins.Dir{{Layer: plugins.LayerPath, Path: filepath.Dir(testPlugin)}},
		Logger: slog.New(slog.DiscardHandler),
	})
	defer h.Close()
	reg := agenttypes.NewRegistry()
	ctx := context.Background()
	if problems := h.Load(ctx, reg); len(problems) > 0 {
		fmt.Println(problems)
		return
	}
	tool, _ := reg.Tool("traced") // the test plugin's: a span "step" and its child "inner"
	ctx, span := tp.Tracer("example").Start(ctx, "execute_tool traced")
	if _, err := tool.Call(ctx, []byte(`{}`)); err != nil {
		fmt.Println(err)
	}
	span.End()

	ended := rec.Ended() // the plugin's spans, parents first, then the caller's
	depth := map[trace.SpanID]int{}
	for _, s := range append(ended[len(ended)-1:], ended[:len(ended)-1]...) {
		depth[s.SpanContext().SpanID()] = depth[s.Parent().SpanID()] + 1
		fmt.Printf("%s%s (%s)\n", strings.Repeat("  ", depth[s.SpanContext().SpanID()]-1), s.Name(), s.InstrumentationScope().Name)
	}
	// Output:
	// execute_tool traced (example)
	//   step (github.com/troupe-dev/troupe/plugins)
	//     inner (github.com/troupe-dev/troupe/plugins)
}
