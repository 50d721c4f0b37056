package script

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/sdk/wire"
	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

const tracedScripts = `package hooks

import (
	"errors"
	"strings"
	"troupe"
)

func Prompt(task troupe.Task) (string, error) {
	if task.Prompt == "panic" {
		panic("boom")
	}
	return strings.ToUpper(task.Prompt), nil
}

func BeforeTool(call troupe.ToolCall) error { return errors.New("no") }
`

const tracedTool = `package hooks

func Run(args map[string]any) (string, error) { return "ran", nil }
`

// callerSpan is a span of a provider of the test's, as the manager's
// span of a hook or tool call is, and the recorder of what it ends.
func callerSpan(t *testing.T, name string) (context.Context, trace.Span, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx := agenttypes.WithEnv(context.Background(), &agenttypes.Env{Dir: t.TempDir(), Note: func(string) {}})
	ctx, span := tp.Tracer("test").Start(ctx, name)
	return ctx, span, rec
}

// scriptSpan is the one span the script host made, under the caller's.
func scriptSpan(t *testing.T, rec *tracetest.SpanRecorder, caller trace.Span, start, end time.Time) sdktrace.ReadOnlySpan {
	t.Helper()
	var mine []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.SpanContext().SpanID() != caller.SpanContext().SpanID() {
			mine = append(mine, s)
		}
	}
	require.Len(t, mine, 1)
	s := mine[0]
	assert.Equal(t, caller.SpanContext().TraceID(), s.SpanContext().TraceID())
	assert.Equal(t, caller.SpanContext().SpanID(), s.Parent().SpanID())
	assert.Equal(t, TracerScope, s.InstrumentationScope().Name)
	assert.False(t, s.StartTime().Before(start) || s.EndTime().After(end), "within the call")
	return s
}

// Each hook and script tool call made in a script host is one span there,
// which comes back to the host and is recorded under the caller's span,
// in its trace, saying what was called and how it went; on the lane and
// over gRPC alike.
func TestEachScriptCallIsASpanUnderTheCallers(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("starts the script host through sh")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	noLane := func() (*exec.Cmd, error) {
		return exec.Command("/bin/sh", "-c", `unset `+wire.EnvLaneFD+`; exec "$0"`, exe), nil
	}
	for _, tc := range []struct {
		name string
		opts ChildOptions
		lane bool
	}{{"lane", ChildOptions{}, true}, {"grpc", ChildOptions{Command: noLane}, false}} {
		t.Run(tc.name, func(t *testing.T) {
			h := New(Options{CallTimeout: time.Minute, Child: tc.opts})
			defer h.Close()
			hooks, diags := h.Compile(context.Background(), "t", &agenttypes.Scripts{
				Hooks: &agenttypes.Script{Source: tracedScripts, File: "t.yaml", Line: 1},
				Tools: []agenttypes.ScriptTool{{Name: "ran", Description: "ran", Script: agenttypes.Script{Source: tracedTool, File: "t.yaml", Line: 1}}},
			})
			require.Empty(t, diags)
			assert.Equal(t, []bool{tc.lane}, lanes(h.child.(*ChildRunner)))

			ctx, caller, rec := callerSpan(t, "invoke_agent t")
			start := time.Now()
			out, err := hooks.Prompt(ctx, agenttypes.ScriptTask{Prompt: "abc"})
			end := time.Now()
			caller.End()
			require.NoError(t, err)
			assert.Equal(t, "ABC", out)
			s := scriptSpan(t, rec, caller, start, end)
			assert.Equal(t, "script Prompt", s.Name())
			assert.Contains(t, s.Attributes(), attrFunction.String("Prompt"))
			assert.Contains(t, s.Attributes(), attrKind.String(string(KindHooks)))
			assert.Equal(t, codes.Unset, s.Status().Code)

			ctx, caller, rec = callerSpan(t, "execute_tool ran")
			start = time.Now()
			out, err = hooks.Tools[0].Call(ctx, []byte(`{}`))
			end = time.Now()
			caller.End()
			require.NoError(t, err)
			assert.Equal(t, "ran", out)
			s = scriptSpan(t, rec, caller, start, end)
			assert.Equal(t, "script Run", s.Name())

			ctx, caller, rec = callerSpan(t, "chat")
			start = time.Now()
			_, err = hooks.Prompt(ctx, agenttypes.ScriptTask{Prompt: "panic"})
			end = time.Now()
			caller.End()
			require.ErrorIs(t, err, agenttypes.ErrScript)
			s = scriptSpan(t, rec, caller, start, end)
			assert.Equal(t, codes.Error, s.Status().Code)
			assert.Contains(t, s.Status().Description, "boom")
		})
	}
}

// The spans carry what was called, never its arguments or answer.
func TestAScriptSpanHoldsNoContent(t *testing.T) {
	r := NewChildRunner(ChildOptions{})
	defer r.Close()
	p := newProgram(KindHooks, tracedScripts)
	ctx, caller, rec := callerSpan(t, "hook")
	require.NoError(t, r.Load(ctx, p))
	_, err := r.Call(ctx, p, &Call{Fn: "BeforeTool", Tool: "grep", Args: []byte(`{"pattern":"secret-argument"}`)})
	require.NoError(t, err)
	caller.End()
	var names []string
	for _, s := range rec.Ended() {
		names = append(names, s.Name())
		for _, a := range s.Attributes() {
			assert.NotContains(t, a.Value.String(), "secret-argument")
		}
		if s.Name() == "script BeforeTool" {
			assert.Contains(t, s.Attributes(), attribute.String("troupe.script.tool", "grep"))
		}
	}
	assert.ElementsMatch(t, []string{"script load", "script BeforeTool", "hook"}, names)
}

// A script host gets no OpenTelemetry variable of the host's
// environment: they say where the host's telemetry goes, with which
// credentials.
func TestAScriptHostGetsNoTelemetryVariables(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer host-secret")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector.example:4317")
	r := NewChildRunner(ChildOptions{})
	defer r.Close()
	require.NoError(t, r.Load(context.Background(), newProgram(KindHooks, goodHooks)))
	ps := pids(r)
	require.Len(t, ps, 1)
	env, err := os.ReadFile("/proc/" + strconv.Itoa(ps[0]) + "/environ")
	require.NoError(t, err)
	assert.NotContains(t, strings.ToUpper(string(env)), "OTEL_")
	assert.NotContains(t, string(env), "host-secret")
}

// describer answers Describe as a script host would, and counts the
// calls.
type describer struct {
	pluginv1.PluginClient
	answer    *pluginv1.DescribeResponse
	described int
}

func (d *describer) Describe(context.Context, *pluginv1.DescribeRequest, ...grpc.CallOption) (*pluginv1.DescribeResponse, error) {
	d.described++
	return d.answer, nil
}

// A script host of this program is known to take the trace context:
// with no lane to ask about, it is not asked. One that another command
// starts may be of an older program, and is asked.
func TestAScriptHostIsAskedWhatItTakesOnlyWhenItCannotBeKnown(t *testing.T) {
	d := &describer{answer: &pluginv1.DescribeResponse{}}
	pr := &proc{conn: d}
	require.NoError(t, pr.describe(true))
	assert.Zero(t, d.described, "this program's script host is not asked")
	assert.True(t, pr.traces)

	d = &describer{answer: &pluginv1.DescribeResponse{}}
	pr = &proc{conn: d}
	require.NoError(t, pr.describe(false))
	assert.Equal(t, 1, d.described, "another command's is")
	assert.False(t, pr.traces, "and taken at its word")
}

// This program's script host says it takes the trace context, as
// describe assumes of it.
func TestThisProgramsScriptHostTakesTheTraceContext(t *testing.T) {
	r := NewChildRunner(ChildOptions{})
	defer r.Close()
	pr, err := r.start()
	require.NoError(t, err)
	defer pr.stop()
	d, err := pr.conn.Describe(context.Background(), &pluginv1.DescribeRequest{ProtocolVersion: wire.Version})
	require.NoError(t, err)
	assert.True(t, d.GetTraceContext())
}
