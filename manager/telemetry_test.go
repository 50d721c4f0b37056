package manager_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
)

// spanTree is the ended spans of a recorder, by span ID.
type spanTree struct {
	spans map[trace.SpanID]sdktrace.ReadOnlySpan
}

func newSpanTree(rec *tracetest.SpanRecorder) spanTree {
	st := spanTree{spans: map[trace.SpanID]sdktrace.ReadOnlySpan{}}
	for _, s := range rec.Ended() {
		st.spans[s.SpanContext().SpanID()] = s
	}
	return st
}

// named returns the spans whose name is name.
func (st spanTree) named(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range st.spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// parent returns s's parent span, nil when it has none among them.
func (st spanTree) parent(s sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
	return st.spans[s.Parent().SpanID()]
}

// children returns the spans whose parent is s and whose name is name.
func (st spanTree) children(s sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, c := range st.spans {
		if c.Parent().SpanID() == s.SpanContext().SpanID() && c.Name() == name {
			out = append(out, c)
		}
	}
	return out
}

func attr(s sdktrace.ReadOnlySpan, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func attrString(s sdktrace.ReadOnlySpan, key string) string {
	v, _ := attr(s, key)
	return v.String()
}

// agentSpan returns the one invoke_agent span of the agent with the task.
func (st spanTree) agentSpan(t *testing.T, task string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range st.spans {
		if strings.HasPrefix(s.Name(), "invoke_agent ") && attrString(s, "troupe.agent.label") == task {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "one invoke_agent span labelled %q", task)
	return found[0]
}

// threeGenerations is a lead that delegates to a child that delegates to
// a grandchild, each calling echo, with the tokens each call reports.
func threeGenerations(t *testing.T, mutate func(*manager.Config)) *treeFixture {
	t.Helper()
	script := map[string][]scripted.Step{
		"coordinate": {
			{Calls: []scripted.Call{{Name: "echo", Args: `{"text":"lead"}`}}, InputTokens: 11, OutputTokens: 3},
			{Calls: []scripted.Call{{Name: "delegate", Args: scripted.JSON(agenttypes.DelegateRequest{Tasks: []agenttypes.ChildTask{
				{Label: "middle", Type: "worker", Prompt: "split the work"}}})}}, InputTokens: 12, OutputTokens: 4},
			{Text: "all done", InputTokens: 13, OutputTokens: 5},
		},
		"split the work": {
			{Calls: []scripted.Call{{Name: "delegate", Args: scripted.JSON(agenttypes.DelegateRequest{Tasks: []agenttypes.ChildTask{
				{Label: "leaf", Type: "worker", Prompt: "do the leaf"}}})}}, InputTokens: 21, OutputTokens: 6},
			{Text: "middle done", InputTokens: 22, OutputTokens: 7},
		},
		"do the leaf": {
			{Calls: []scripted.Call{{Name: "echo", Args: `{"text":"leaf secret"}`}}, InputTokens: 31, OutputTokens: 8},
			{Text: "leaf done", InputTokens: 32, OutputTokens: 9},
		},
	}
	return newTreeFixture(t, script, func(c *manager.Config) {
		c.MaxDepth = 2
		if mutate != nil {
			mutate(c)
		}
	})
}

func TestTelemetryTreeIsOneTraceUnderItsDelegateCalls(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tf := threeGenerations(t, func(c *manager.Config) { c.TracerProvider = tp })

	// The Go caller's span is the lead's parent.
	ctx, caller := tp.Tracer("test").Start(context.Background(), "caller")
	a, err := tf.mgr.Spawn(ctx, manager.SpawnRequest{Type: "lead", Task: "coordinate", Label: "lead"})
	require.NoError(t, err)
	res, err := a.Wait(t.Context())
	require.NoError(t, err)
	require.Equal(t, manager.Completed, res.State, res.Error)
	caller.End()

	st := newSpanTree(rec)
	traceID := caller.SpanContext().TraceID()
	for _, s := range st.spans {
		assert.Equal(t, traceID, s.SpanContext().TraceID(), "span %s is in the caller's trace", s.Name())
	}

	lead := st.agentSpan(t, "lead")
	assert.Equal(t, traceID.String(), res.TraceID, "the result names its trace")
	assert.Equal(t, "invoke_agent lead", lead.Name())
	assert.Equal(t, caller.SpanContext().SpanID(), lead.Parent().SpanID())
	assert.Equal(t, "invoke_agent", attrString(lead, "gen_ai.operation.name"))
	assert.Equal(t, a.ID(), attrString(lead, "gen_ai.agent.id"))
	assert.Equal(t, "completed", attrString(lead, "troupe.agent.state"))
	assert.Equal(t, "done", attrString(lead, "troupe.agent.reason"))
	assert.Equal(t, codes.Unset, lead.Status().Code)

	// Each generation's invoke_agent hangs under its parent's delegate call.
	parent := lead
	for depth, label := range []string{"middle", "leaf"} {
		agent := st.agentSpan(t, label)
		call := st.parent(agent)
		require.NotNil(t, call, "%s's span has a parent span", label)
		assert.Equal(t, "execute_tool delegate", call.Name())
		assert.Equal(t, parent.SpanContext().SpanID(), call.Parent().SpanID(), "the delegate call is %s's parent's", label)
		d, _ := attr(agent, "troupe.agent.depth")
		assert.Equal(t, int64(depth+1), d.AsInt64())
		parent = agent
	}
	leaf := parent
	echoes := st.children(leaf, "execute_tool echo")
	require.Len(t, echoes, 1, "the grandchild's tool call is under its own span")
	assert.Equal(t, "echo", attrString(echoes[0], "gen_ai.tool.name"))
	assert.NotEmpty(t, attrString(echoes[0], "gen_ai.tool.call.id"))
	for _, key := range []string{"gen_ai.tool.call.arguments", "gen_ai.tool.call.result"} {
		_, has := attr(echoes[0], key)
		assert.False(t, has, "no %s unless content is asked for", key)
	}
	for _, key := range []string{"troupe.agent.task", "troupe.agent.output"} {
		_, has := attr(leaf, key)
		assert.False(t, has, "no %s unless content is asked for", key)
	}

	// chat spans carry the tokens the model reported, under their agent.
	chats := st.children(leaf, "chat scripted")
	require.Len(t, chats, 2)
	in, out := 0, 0
	for _, c := range chats {
		v, _ := attr(c, "gen_ai.usage.input_tokens")
		in += int(v.AsInt64())
		v, _ = attr(c, "gen_ai.usage.output_tokens")
		out += int(v.AsInt64())
		assert.Equal(t, "chat", attrString(c, "gen_ai.operation.name"))
		assert.Equal(t, trace.SpanKindClient, c.SpanKind())
		for _, key := range []string{"gen_ai.input.messages", "gen_ai.output.messages"} {
			_, has := attr(c, key)
			assert.False(t, has, "no %s unless content is asked for", key)
		}
	}
	assert.Equal(t, 31+32, in)
	assert.Equal(t, 8+9, out)
	leadIn, _ := attr(lead, "troupe.usage.subtree.input_tokens")
	assert.Equal(t, int64(res.Usage.InputTokens), leadIn.AsInt64(), "the lead's span holds its tree's usage")
}

func TestTelemetryRecordsContentOnlyWhenAsked(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tf := threeGenerations(t, func(c *manager.Config) { c.TracerProvider = tp; c.RecordContent = true })
	res := tf.run(t, manager.SpawnRequest{Type: "lead", Task: "coordinate", Label: "lead"})
	require.Equal(t, manager.Completed, res.State, res.Error)

	st := newSpanTree(rec)
	leaf := st.agentSpan(t, "leaf")
	echo := st.children(leaf, "execute_tool echo")[0]
	assert.Contains(t, attrString(echo, "gen_ai.tool.call.arguments"), "leaf secret")
	assert.Equal(t, "echo:leaf secret", attrString(echo, "gen_ai.tool.call.result"))
	var sawTask bool
	for _, c := range st.children(leaf, "chat scripted") {
		var msgs []struct {
			Role  string
			Parts []struct{ Type, Content string }
		}
		require.NoError(t, json.Unmarshal([]byte(attrString(c, "gen_ai.input.messages")), &msgs))
		for _, m := range msgs {
			for _, p := range m.Parts {
				sawTask = sawTask || (m.Role == "user" && strings.Contains(p.Content, "do the leaf"))
			}
		}
		assert.NotEmpty(t, attrString(c, "gen_ai.output.messages"))
	}
	assert.True(t, sawTask, "the prompt's task is in gen_ai.input.messages")
}

// TestTelemetryFailedRunsAndToolsCarryErrorType: a failed run and a
// failed tool call have status Error and error.type; the error's text,
// which can quote what a tool read, is their description only when
// content is recorded.
func TestTelemetryFailedRunsAndToolsCarryErrorType(t *testing.T) {
	for _, content := range []bool{false, true} {
		t.Run(fmt.Sprintf("content %v", content), func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			failing := &agenttypes.ToolFunc{
				ToolSpec: agenttypes.ToolSpec{Name: "fail", Description: "fails"},
				Func: func(context.Context, json.RawMessage) (string, error) {
					return "", errors.New("disk on fire")
				},
			}
			model := scripted.New(
				scripted.Step{Calls: []scripted.Call{{Name: "fail", Args: `{}`}}},
				scripted.Step{Calls: []scripted.Call{{Name: "echo", Args: `{"text":"again"}`}}},
				scripted.Step{Text: "never reached"},
			)
			f := newFixture(t, model, func(c *manager.Config) { c.TracerProvider = tp; c.RecordContent = content }, failing)
			res := f.run(t, manager.SpawnRequest{Label: "w", Budget: agenttypes.Budget{MaxTurns: 2}})
			require.Equal(t, manager.Failed, res.State)

			st := newSpanTree(rec)
			w := st.agentSpan(t, "w")
			assert.Equal(t, codes.Error, w.Status().Code)
			assert.Equal(t, "budget_turns", attrString(w, "error.type"))
			fail := st.children(w, "execute_tool fail")
			require.Len(t, fail, 1)
			assert.Equal(t, codes.Error, fail[0].Status().Code)
			assert.Equal(t, "_OTHER", attrString(fail[0], "error.type"))
			if content {
				assert.Contains(t, fail[0].Status().Description, "disk on fire")
				assert.Contains(t, w.Status().Description, "turn budget of 2 used up")
			} else {
				assert.Equal(t, "_OTHER", fail[0].Status().Description, "no error text unless content is asked for")
				assert.Equal(t, "budget_turns", w.Status().Description)
			}
		})
	}
}

func TestTelemetryToolSeesItsCallSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	var inside trace.SpanContext
	probe := &agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "probe", Description: "looks at its context"},
		Func: func(ctx context.Context, _ json.RawMessage) (string, error) {
			inside = trace.SpanContextFromContext(ctx)
			_, own := trace.SpanFromContext(ctx).TracerProvider().Tracer("tool").Start(ctx, "tool's own")
			own.End()
			return "ok", nil
		},
	}
	model := scripted.New(scripted.Step{Calls: []scripted.Call{{Name: "probe", Args: `{}`}}}, scripted.Step{Text: "done"})
	f := newFixture(t, model, func(c *manager.Config) { c.TracerProvider = tp }, probe)
	res := f.run(t, manager.SpawnRequest{Label: "w"})
	require.Equal(t, manager.Completed, res.State, res.Error)

	st := newSpanTree(rec)
	call := st.children(st.agentSpan(t, "w"), "execute_tool probe")
	require.Len(t, call, 1)
	assert.Equal(t, call[0].SpanContext(), inside, "the tool's context carries its call's span")
	own := st.named("tool's own")
	require.Len(t, own, 1)
	assert.Equal(t, call[0].SpanContext().SpanID(), own[0].Parent().SpanID())
}

func TestTelemetryMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	tf := threeGenerations(t, func(c *manager.Config) { c.MeterProvider = mp })
	res := tf.run(t, manager.SpawnRequest{Type: "lead", Task: "coordinate", Label: "lead"})
	require.Equal(t, manager.Completed, res.State, res.Error)

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(t.Context(), &rm))
	got := metricsByName(rm)

	tokens, ok := got["gen_ai.client.token.usage"].Data.(metricdata.Histogram[int64])
	require.True(t, ok, "token usage is an int histogram")
	sums := map[string]int64{}
	for _, dp := range tokens.DataPoints {
		typ, _ := dp.Attributes.Value("gen_ai.token.type")
		model, _ := dp.Attributes.Value("gen_ai.request.model")
		assert.Equal(t, "scripted", model.AsString())
		sums[typ.AsString()] += dp.Sum
	}
	assert.Equal(t, int64(res.Usage.InputTokens), sums["input"])
	assert.Equal(t, int64(res.Usage.OutputTokens), sums["output"])

	dur, ok := got["gen_ai.client.operation.duration"].Data.(metricdata.Histogram[float64])
	require.True(t, ok)
	require.Len(t, dur.DataPoints, 1)
	assert.Equal(t, uint64(3+2+2), dur.DataPoints[0].Count, "one duration per model call of the tree's script")

	ends, ok := got["troupe.agent.ends"].Data.(metricdata.Sum[int64])
	require.True(t, ok)
	var ended int64
	for _, dp := range ends.DataPoints {
		reason, _ := dp.Attributes.Value("troupe.agent.reason")
		assert.Equal(t, "done", reason.AsString())
		ended += dp.Value
	}
	assert.Equal(t, int64(3), ended)

	agents, ok := got["troupe.agents"].Data.(metricdata.Gauge[int64])
	require.True(t, ok)
	byState := map[string]int64{}
	for _, dp := range agents.DataPoints {
		s, _ := dp.Attributes.Value("troupe.agent.state")
		byState[s.AsString()] = dp.Value
	}
	assert.Equal(t, int64(3), byState["completed"])
	assert.Equal(t, int64(0), byState["running"])
	_, ok = got["troupe.queue.length"]
	assert.True(t, ok, "the queue's length is observed")

	// A closed manager is no longer observed.
	require.NoError(t, tf.mgr.Close(t.Context()))
	rm = metricdata.ResourceMetrics{}
	require.NoError(t, reader.Collect(t.Context(), &rm))
	_, ok = metricsByName(rm)["troupe.agents"]
	assert.False(t, ok, "the gauges' callback is gone once the manager is closed")
}

func metricsByName(rm metricdata.ResourceMetrics) map[string]metricdata.Metrics {
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}
