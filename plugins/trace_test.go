package plugins_test

import (
	"context"
	"log/slog"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
	"github.com/troupe-dev/troupe/plugins"
	"github.com/troupe-dev/troupe/sdk/wire"
)

// tracedCall calls tool within a span of its own, "execute_tool", as the
// manager does, recorded by a provider of the test's; it returns the
// tool's answer, that span, every span recorded, and the call's time.
type tracedCall struct {
	out        string
	call       sdktrace.ReadOnlySpan
	spans      []sdktrace.ReadOnlySpan
	start, end time.Time
}

func callTraced(t *testing.T, reg *agenttypes.Registry, tool, args string) tracedCall {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, span := tp.Tracer("test").Start(ctxTimeout(t, 20*time.Second), "execute_tool "+tool)
	start := time.Now()
	out, err := callTool(ctx, t, reg, tool, args)
	end := time.Now()
	span.End()
	require.NoError(t, err)
	c := tracedCall{out: out, spans: rec.Ended(), start: start, end: end}
	for _, s := range c.spans {
		if s.SpanContext().SpanID() == span.SpanContext().SpanID() {
			c.call = s
		}
	}
	require.NotNil(t, c.call)
	return c
}

func (c tracedCall) named(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range c.spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// A span a plugin's tool makes, with the tracer its SDK installs, ends up
// in the host's exporter, in the caller's trace, under the call's span,
// with what the plugin put on it; on the lane and over gRPC alike.
func TestAPluginsSpansJoinTheCallersTrace(t *testing.T) {
	for _, path := range []struct {
		name string
		env  []string
		lane bool
	}{{"lane", nil, true}, {"grpc", []string{"TESTPLUGIN_NO_LANE=1"}, false}} {
		t.Run(path.name, func(t *testing.T) {
			h, _ := newHost(t, plugins.Config{Env: path.env}, pluginDir(t, "test"))
			reg := loaded(t, h)
			require.Equal(t, path.lane, plugins.UsesLane(h, "test"))
			c := callTraced(t, reg, "traced", `{}`)

			callSC := c.call.SpanContext()
			assert.Equal(t, callSC.TraceID().String()+" "+callSC.SpanID().String(), c.out,
				"the plugin's tool gets the call's span context as its remote parent")
			steps, inners := c.named("step"), c.named("inner")
			require.Len(t, steps, 1, "recorded: %v", names(c.spans))
			require.Len(t, inners, 1)
			step, inner := steps[0], inners[0]
			assert.Equal(t, callSC.TraceID(), step.SpanContext().TraceID())
			assert.Equal(t, callSC.SpanID(), step.Parent().SpanID(), "the plugin's span is under the call's")
			assert.Equal(t, step.SpanContext().SpanID(), inner.Parent().SpanID(), "and its child under it")
			assert.Equal(t, plugins.Scope, step.InstrumentationScope().Name)

			assert.Contains(t, step.Attributes(), attribute.Int64("step.n", 1))
			assert.Contains(t, step.Attributes(), attribute.String("step.what", "look"))
			assert.Equal(t, trace.SpanKindClient, inner.SpanKind())
			assert.Equal(t, codes.Error, inner.Status().Code)
			assert.Equal(t, "inner failed", inner.Status().Description)
			var events []string
			for _, e := range inner.Events() {
				events = append(events, e.Name)
			}
			assert.Contains(t, events, "found")
			for _, s := range []sdktrace.ReadOnlySpan{step, inner} {
				assert.False(t, s.StartTime().Before(c.start), "%s starts within the call", s.Name())
				assert.False(t, s.EndTime().After(c.end), "%s ends within the call", s.Name())
				assert.False(t, s.EndTime().Before(s.StartTime()))
			}
		})
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name()
	}
	return out
}

// A call whose context has no span sends no trace context: the plugin's
// tool sees none, on the lane and over gRPC.
func TestACallWithoutASpanCarriesNoTraceContext(t *testing.T) {
	for _, path := range []struct {
		name string
		env  []string
	}{{"lane", nil}, {"grpc", []string{"TESTPLUGIN_NO_LANE=1"}}} {
		t.Run(path.name, func(t *testing.T) {
			h, _ := newHost(t, plugins.Config{Env: path.env}, pluginDir(t, "test"))
			reg := loaded(t, h)
			out, err := callTool(ctxTimeout(t, 10*time.Second), t, reg, "traced", `{}`)
			require.NoError(t, err)
			assert.Equal(t, "none", out)
		})
	}
}

// A call under a span that is not sampled sends no trace context
// either: the plugin would record nothing under it.
func TestACallUnderASpanNotSampledCarriesNoTraceContext(t *testing.T) {
	for _, path := range []struct {
		name string
		env  []string
	}{{"lane", nil}, {"grpc", []string{"TESTPLUGIN_NO_LANE=1"}}} {
		t.Run(path.name, func(t *testing.T) {
			h, _ := newHost(t, plugins.Config{Env: path.env}, pluginDir(t, "test"))
			reg := loaded(t, h)
			tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
			ctx, span := tp.Tracer("test").Start(ctxTimeout(t, 10*time.Second), "execute_tool traced")
			defer span.End()
			require.True(t, span.SpanContext().IsValid())
			out, err := callTool(ctx, t, reg, "traced", `{}`)
			require.NoError(t, err)
			assert.Equal(t, "none", out)
		})
	}
}

// A plugin that makes far more spans, far larger, than a call may
// return sends what the limits allow, cut, and says how many it left out.
func TestAPluginsFloodOfSpansIsCutToTheLimits(t *testing.T) {
	h, _ := newHost(t, plugins.Config{}, pluginDir(t, "test"))
	reg := loaded(t, h)
	c := callTraced(t, reg, "flood", `{}`)
	replayed := len(c.spans) - 1
	assert.Positive(t, replayed)
	assert.LessOrEqual(t, replayed, wire.MaxSpans)
	checkLimits(t, c)
	dropped := attr(c.call, wire.SpansDroppedKey)
	assert.Equal(t, int64(1000-replayed), dropped.AsInt64(), "every span left out is counted")
}

// A plugin that answers with spans no well-behaved plugin sends (too
// many, too large, outside the call's time, with parents that are not
// there or point at each other, with IDs that are no IDs) gets the
// host's limits enforced on them: what is recorded is cut, inside the
// call, and in the call's trace under the call's span.
func TestAHostilePluginsSpansAreCutByTheHost(t *testing.T) {
	h, _ := newHost(t, plugins.Config{Env: []string{"TESTPLUGIN_HOSTILE_SPANS=1"}}, pluginDir(t, "test"))
	reg := loaded(t, h)
	c := callTraced(t, reg, "spans", `{}`)
	assert.Equal(t, "hostile", c.out)
	replayed := len(c.spans) - 1
	assert.Equal(t, wire.MaxSpans, replayed)
	checkLimits(t, c)
	for _, name := range []string{"loop-a", "orphan"} {
		spans := c.named(name)
		require.Len(t, spans, 1, name)
		assert.Equal(t, c.call.SpanContext().SpanID(), spans[0].Parent().SpanID(), "%s goes under the call's span", name)
	}
	loopA, loopB := c.named("loop-a"), c.named("loop-b")
	require.Len(t, loopB, 1)
	assert.Equal(t, loopA[0].SpanContext().SpanID(), loopB[0].Parent().SpanID(), "a loop is broken at its first span")
	assert.Empty(t, c.named("bad-id"))
	assert.Empty(t, c.named("duplicate"))
	// 1005 sent, MaxSpans recorded, and the 7 the plugin says it left out.
	assert.Equal(t, int64(1005-wire.MaxSpans+7), attr(c.call, wire.SpansDroppedKey).AsInt64())
}

// A plugin that answers every call, traced or not, with millions of
// empty spans costs the host little more than the answer's bytes: the
// spans of a traced call are read within the limits, and counted as left
// out; those of a call not traced are not read. The bound is generous: a
// struct a span would cost more than a hundred times as much.
func TestAHostilePluginsFloodOfEmptySpansCostsTheHostBoundedMemory(t *testing.T) {
	h, _ := newHost(t, plugins.Config{Env: []string{"TESTPLUGIN_HOSTILE_SPANS=1"}}, pluginDir(t, "test"))
	reg := loaded(t, h)
	ctx := ctxTimeout(t, 20*time.Second)
	var traced tracedCall
	for _, trace := range []bool{false, true} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if trace {
			traced = callTraced(t, reg, "empty-spans", `{}`)
		} else {
			out, err := callTool(ctx, t, reg, "empty-spans", `{}`)
			require.NoError(t, err)
			assert.Equal(t, "empty", out)
		}
		runtime.ReadMemStats(&after)
		cost := after.TotalAlloc - before.TotalAlloc
		assert.Less(t, cost, uint64(6*wire.MaxMessageSize), "traced %t: bytes allocated", trace)
		t.Logf("traced %t: %d bytes allocated", trace, cost)
	}
	assert.Equal(t, "empty", traced.out)
	require.Len(t, traced.spans, 1, "none of them is recorded")
	assert.Greater(t, attr(traced.call, wire.SpansDroppedKey).AsInt64(), int64(4_000_000), "each is counted as left out")
}

// recordOnly records the spans named name without sampling them, and
// samples every other span, whatever its parent.
type recordOnly struct{ name string }

func (r recordOnly) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if p.Name == r.name {
		return sdktrace.SamplingResult{Decision: sdktrace.RecordOnly}
	}
	return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample}
}

func (r recordOnly) Description() string { return "recordOnly" }

// A hostile plugin that answers a call not traced (its span is recorded
// but not sampled) with spans anyway has none of them recorded, even by a
// provider that would record them.
func TestAHostilePluginsSpansOnACallNotTracedAreIgnored(t *testing.T) {
	h, _ := newHost(t, plugins.Config{Env: []string{"TESTPLUGIN_HOSTILE_SPANS=1"}}, pluginDir(t, "test"))
	reg := loaded(t, h)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(recordOnly{"execute_tool spans"}))
	ctx, span := tp.Tracer("test").Start(ctxTimeout(t, 10*time.Second), "execute_tool spans")
	require.True(t, span.IsRecording())
	require.False(t, span.SpanContext().IsSampled())
	out, err := callTool(ctx, t, reg, "spans", `{}`)
	require.NoError(t, err)
	assert.Equal(t, "hostile", out)
	span.End()
	ended := rec.Ended()
	require.Equal(t, 1, len(ended), "the call's span alone is recorded")
	assert.Empty(t, ended[0].Attributes(), "nothing is counted either")
}

// checkLimits checks every span the plugin's call recorded: within the
// limits, inside the call's time, in its trace, under a span of it.
func checkLimits(t *testing.T, c tracedCall) {
	t.Helper()
	ids := map[trace.SpanID]bool{}
	for _, s := range c.spans {
		ids[s.SpanContext().SpanID()] = true
	}
	for _, s := range c.spans {
		if s == c.call {
			continue
		}
		assert.LessOrEqual(t, len(s.Name()), wire.MaxSpanNameLen)
		assert.True(t, utf8.ValidString(s.Name()))
		assert.LessOrEqual(t, len(s.Attributes()), wire.MaxSpanAttributes)
		for _, a := range s.Attributes() {
			assert.LessOrEqual(t, len(a.Key), wire.MaxAttributeKeyLen)
			assert.LessOrEqual(t, len(a.Value.String()), wire.MaxAttributeValueLen)
		}
		assert.LessOrEqual(t, len(s.Events()), wire.MaxSpanEvents)
		for _, e := range s.Events() {
			assert.LessOrEqual(t, len(e.Name), wire.MaxSpanNameLen)
			assert.LessOrEqual(t, len(e.Attributes), wire.MaxEventAttributes)
			assert.False(t, e.Time.Before(c.start) || e.Time.After(c.end), "an event inside the call")
		}
		assert.False(t, s.StartTime().Before(c.start), "starts within the call")
		assert.False(t, s.EndTime().After(c.end), "ends within the call")
		assert.False(t, s.EndTime().Before(s.StartTime()), "ends after it starts")
		assert.Equal(t, c.call.SpanContext().TraceID(), s.SpanContext().TraceID())
		assert.True(t, ids[s.Parent().SpanID()], "its parent was recorded")
	}
}

func attr(s sdktrace.ReadOnlySpan, key attribute.Key) attribute.Value {
	for _, a := range s.Attributes() {
		if a.Key == key {
			return a.Value
		}
	}
	return attribute.Value{}
}

// No plugin process gets the OpenTelemetry SDK's variables, which say
// where the host's telemetry goes and with which credentials: not when
// the host's configuration names them (Config.Env, which passes whatever
// else it names), and not from the host's environment (which passes only
// the variables every process gets).
func TestAPluginGetsNoTelemetryVariables(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer host-secret")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector.example:4317")
	t.Setenv("OTEL_SERVICE_NAME", "troupe")
	h, logs := newHost(t, plugins.Config{Env: []string{"OTEL_EXPORTER_OTLP_TRACES_HEADERS=named-secret", "otel_resource_attributes=a=b", "NAMED_FOR_IT=yes"}}, pluginDir(t, "test"))
	reg := loaded(t, h)
	env, err := callTool(ctxTimeout(t, 10*time.Second), t, reg, "env", `{}`)
	require.NoError(t, err)
	assert.Contains(t, env, "NAMED_FOR_IT=yes", "what else the configuration names passes")
	assert.NotContains(t, env, "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "the configuration's variable is left out")
	assert.NotContains(t, env, "named-secret")
	assert.NotContains(t, env, "otel_resource_attributes", "whatever its case")
	assert.Contains(t, logs.String(), "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "the host says what it left out")
	assert.NotContains(t, env, "host-secret", "nor does the host's environment pass")
	assert.NotContains(t, strings.ToUpper(env), "OTEL_")
}

// A plugin started again after it crashed counts as a restart, by name;
// its first start does not.
func TestRestartsOfACrashedPluginAreCounted(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	h, _ := newHost(t, plugins.Config{MeterProvider: mp}, pluginDir(t, "test"))
	reg := loaded(t, h)
	ctx := ctxTimeout(t, 20*time.Second)
	_, err := callTool(ctx, t, reg, "pid", `{}`)
	require.NoError(t, err)
	assert.Zero(t, restarts(t, reader, "test"), "a first start is no restart")
	for i := range 2 {
		pid := h.PID("test")
		require.NotZero(t, pid, "crash %d", i)
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
		require.True(t, waitGone(pid, 2*time.Second))
		require.Eventually(t, func() bool { return h.PID("test") == 0 }, 2*time.Second, 5*time.Millisecond, "the host sees the exit")
		_, err = callTool(ctx, t, reg, "pid", `{}`)
		require.NoError(t, err)
	}
	assert.Equal(t, int64(2), restarts(t, reader, "test"))
}

// restarts is the count of plugin name's restarts that reader sees.
func restarts(t *testing.T, reader sdkmetric.Reader, name string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != plugins.RestartsMetric {
				continue
			}
			sum, ok := m.Data.(metricdata.Sum[int64])
			require.True(t, ok, "a sum of int64")
			assert.True(t, sum.IsMonotonic)
			for _, p := range sum.DataPoints {
				if v, ok := p.Attributes.Value(plugins.PluginNameKey); ok && v.AsString() == name {
					return p.Value
				}
			}
		}
	}
	return 0
}

// Through the manager, with a TracerProvider: the spans a plugin's tool
// makes are under the manager's execute_tool span of that call, in the
// agent's trace.
func TestAPluginsSpansAreUnderTheManagersToolCallSpan(t *testing.T) {
	h, _ := newHost(t, plugins.Config{}, pluginDir(t, "test"))
	reg := agenttypes.NewRegistry()
	require.NoError(t, reg.RegisterType(agenttypes.Type{Name: "caller", Description: "calls a plugin tool", Tools: []string{"traced"}}))
	require.Empty(t, h.Load(ctxTimeout(t, 20*time.Second), reg))
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	model := scripted.New(
		scripted.Step{Text: "calling", Calls: []scripted.Call{{Name: "traced", Args: `{}`}}},
		scripted.Step{Text: "done"},
	)
	mgr, err := manager.New(manager.Config{
		Registry: reg, DefaultModel: "scripted", Logger: slog.New(slog.DiscardHandler), TracerProvider: tp,
		Models: manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil }),
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, mgr.Close(ctxTimeout(t, 10*time.Second))) })
	res := run(t, mgr, manager.SpawnRequest{Type: "caller", Task: "call it"})
	require.Equal(t, manager.Completed, res.State, "%v", res.Err)

	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		spans[s.Name()] = s
	}
	call, step := spans["execute_tool traced"], spans["step"]
	require.NotNil(t, call, "recorded: %v", names(rec.Ended()))
	require.NotNil(t, step)
	assert.Equal(t, call.SpanContext().TraceID(), step.SpanContext().TraceID())
	assert.Equal(t, call.SpanContext().SpanID(), step.Parent().SpanID())
	assert.Equal(t, step.SpanContext().SpanID(), spans["inner"].Parent().SpanID())
}

// A plugin type's own loop gets the agent's trace context too, and its
// spans come back with the loop's answer, under the agent's span; the
// host's spans of the loop's model and tool calls are in the same trace.
func TestAPluginLoopsSpansJoinTheAgentsTrace(t *testing.T) {
	h, _ := newHost(t, plugins.Config{}, pluginDir(t, "test"))
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reg := agenttypes.NewRegistry()
	require.NoError(t, reg.RegisterTool(echoTool()))
	require.Empty(t, h.Load(ctxTimeout(t, 20*time.Second), reg))
	model := scripted.New(scripted.Step{Text: "answered"})
	mgr, err := manager.New(manager.Config{
		Registry: reg, DefaultModel: "scripted", Logger: slog.New(slog.DiscardHandler), TracerProvider: tp,
		Models: manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil }),
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, mgr.Close(ctxTimeout(t, 10*time.Second))) })
	res := run(t, mgr, manager.SpawnRequest{Type: "looper", Task: "loop once"})
	require.Equal(t, manager.Completed, res.State, "%v", res.Err)

	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		spans[s.Name()] = s
	}
	agent, loop := spans["invoke_agent looper"], spans["loop"]
	require.NotNil(t, agent, "recorded: %v", names(rec.Ended()))
	require.NotNil(t, loop, "recorded: %v", names(rec.Ended()))
	assert.Equal(t, agent.SpanContext().TraceID(), loop.SpanContext().TraceID())
	assert.Equal(t, agent.SpanContext().SpanID(), loop.Parent().SpanID())
	assert.False(t, loop.StartTime().Before(agent.StartTime()))
}
