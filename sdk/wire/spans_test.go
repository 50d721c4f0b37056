package wire_test

import (
	"context"
	"encoding/binary"
	"math"
	"runtime"
	"slices"
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
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/troupe-dev/troupe/sdk/wire"
	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// replay records spans under a call's span, "call", that ran from start
// to end, and returns what was recorded, the call's span first.
func replay(t *testing.T, spans []*pluginv1.Span, dropped uint32, start, end time.Time) []sdktrace.ReadOnlySpan {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{
		AttributeValueLengthLimit: -1, AttributeCountLimit: -1, EventCountLimit: -1, AttributePerEventCountLimit: -1,
	}))
	ctx, call := tp.Tracer("test").Start(context.Background(), "call")
	wire.RecordSpans(ctx, "scope", encode(t, &pluginv1.Trace{Spans: spans, DroppedSpans: dropped}), start, end)
	call.End()
	got := rec.Ended()
	require.NotEmpty(t, got)
	last := got[len(got)-1]
	require.Equal(t, "call", last.Name())
	return append([]sdktrace.ReadOnlySpan{last}, got[:len(got)-1]...)
}

// encode is tr as a plugin's answer carries it.
func encode(t *testing.T, tr *pluginv1.Trace) []byte {
	t.Helper()
	b, err := proto.Marshal(tr)
	require.NoError(t, err)
	return b
}

func sid(n int) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

func byName(spans []sdktrace.ReadOnlySpan) map[string]sdktrace.ReadOnlySpan {
	out := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		out[s.Name()] = s
	}
	return out
}

// A plugin's spans are recorded as it made them: names, kinds,
// attributes of each kind, events, statuses and times, each under its
// parent, whatever order they came in.
func TestASpanIsRecordedAsThePluginMadeIt(t *testing.T) {
	start := time.Unix(1000, 0)
	end := start.Add(time.Second)
	at := func(d time.Duration) int64 { return start.Add(d).UnixNano() }
	spans := []*pluginv1.Span{
		{SpanId: sid(2), ParentSpanId: sid(1), Name: "child", Kind: int32(trace.SpanKindClient),
			StartUnixNano: at(200 * time.Millisecond), EndUnixNano: at(300 * time.Millisecond),
			StatusCode: int32(codes.Error), StatusMessage: "it broke",
			Events: []*pluginv1.SpanEvent{{Name: "found", TimeUnixNano: at(250 * time.Millisecond),
				Attributes: []*pluginv1.Attribute{{Key: "n", Value: &pluginv1.Attribute_IntValue{IntValue: 3}}}}}},
		{SpanId: sid(1), ParentSpanId: sid(77), Name: "parent",
			StartUnixNano: at(100 * time.Millisecond), EndUnixNano: at(400 * time.Millisecond), StatusCode: int32(codes.Ok),
			Attributes: []*pluginv1.Attribute{
				{Key: "s", Value: &pluginv1.Attribute_StringValue{StringValue: "text"}},
				{Key: "i", Value: &pluginv1.Attribute_IntValue{IntValue: 7}},
				{Key: "d", Value: &pluginv1.Attribute_DoubleValue{DoubleValue: 1.5}},
				{Key: "b", Value: &pluginv1.Attribute_BoolValue{BoolValue: true}},
				{Key: "", Value: &pluginv1.Attribute_BoolValue{BoolValue: true}},
				{Key: "novalue"},
			}},
	}
	got := replay(t, spans, 0, start, end)
	require.Len(t, got, 3)
	call, m := got[0], byName(got)
	parent, child := m["parent"], m["child"]
	assert.Equal(t, call.SpanContext().SpanID(), parent.Parent().SpanID(), "a parent not among them is the call's span")
	assert.Equal(t, parent.SpanContext().SpanID(), child.Parent().SpanID())
	assert.Equal(t, call.SpanContext().TraceID(), child.SpanContext().TraceID())
	assert.Equal(t, "scope", child.InstrumentationScope().Name)
	assert.Equal(t, []attribute.KeyValue{attribute.String("s", "text"), attribute.Int64("i", 7), attribute.Float64("d", 1.5), attribute.Bool("b", true)}, parent.Attributes())
	assert.Equal(t, codes.Ok, parent.Status().Code)
	assert.Equal(t, trace.SpanKindInternal, parent.SpanKind())
	assert.Equal(t, trace.SpanKindClient, child.SpanKind())
	assert.Equal(t, sdktrace.Status{Code: codes.Error, Description: "it broke"}, child.Status())
	assert.Equal(t, start.Add(200*time.Millisecond), child.StartTime())
	assert.Equal(t, start.Add(300*time.Millisecond), child.EndTime())
	require.Len(t, child.Events(), 1)
	assert.Equal(t, "found", child.Events()[0].Name)
	assert.Equal(t, start.Add(250*time.Millisecond), child.Events()[0].Time)
	assert.Equal(t, []attribute.KeyValue{attribute.Int64("n", 3)}, child.Events()[0].Attributes)
	assert.Empty(t, call.Attributes(), "nothing was left out")
}

// What a plugin says is not trusted: times are moved into the call's,
// a kind that is none is internal, text and counts are cut, and spans
// past the limits or without an ID of their own are left out, and
// counted on the call's span with those the plugin left out.
func TestAPluginsSpansAreHeldToTheLimits(t *testing.T) {
	start := time.Unix(1000, 0)
	end := start.Add(time.Second)
	long := strings.Repeat("ü", 2000) // 4000 bytes
	many := make([]*pluginv1.Attribute, 100)
	for i := range many {
		many[i] = &pluginv1.Attribute{Key: strconv.Itoa(i) + long, Value: &pluginv1.Attribute_StringValue{StringValue: long}}
	}
	events := make([]*pluginv1.SpanEvent, 100)
	for i := range events {
		events[i] = &pluginv1.SpanEvent{Name: long, TimeUnixNano: end.Add(time.Hour).UnixNano(), Attributes: many}
	}
	spans := []*pluginv1.Span{
		{SpanId: sid(1), Name: long, Kind: 42, Attributes: many, Events: events,
			StartUnixNano: start.Add(-time.Hour).UnixNano(), EndUnixNano: -5, StatusCode: int32(codes.Error), StatusMessage: long},
		{SpanId: sid(1), Name: "same ID"},
		{SpanId: []byte{1}, Name: "short ID"},
		{SpanId: make([]byte, 8), Name: "zero ID"},
	}
	for i := range 2 * wire.MaxSpans {
		spans = append(spans, &pluginv1.Span{SpanId: sid(100 + i), Name: "many"})
	}
	got := replay(t, spans, 5, start, end)
	require.Len(t, got, 1+wire.MaxSpans)
	first := byName(got)[wire.Cut(long, wire.MaxSpanNameLen)]
	require.NotNil(t, first, "the long name is cut")
	assert.LessOrEqual(t, len(first.Name()), wire.MaxSpanNameLen)
	assert.Equal(t, trace.SpanKindInternal, first.SpanKind())
	assert.Equal(t, start, first.StartTime(), "a start before the call is the call's")
	assert.Equal(t, start, first.EndTime(), "an end before the start is the start")
	assert.Len(t, first.Attributes(), wire.MaxSpanAttributes)
	for _, a := range first.Attributes() {
		assert.LessOrEqual(t, len(a.Key), wire.MaxAttributeKeyLen)
		assert.GreaterOrEqual(t, len(a.Key), wire.MaxAttributeKeyLen-1, "cut whole characters")
		assert.Len(t, a.Value.AsString(), wire.MaxAttributeValueLen)
	}
	assert.Len(t, first.Status().Description, wire.MaxAttributeValueLen)
	require.Len(t, first.Events(), wire.MaxSpanEvents)
	for _, e := range first.Events() {
		assert.Equal(t, end, e.Time, "an event after the call is at its end")
		assert.Len(t, e.Attributes, wire.MaxEventAttributes)
	}
	names := byName(got)
	for _, gone := range []string{"same ID", "short ID", "zero ID"} {
		assert.NotContains(t, names, gone)
	}
	dropped, _ := attrOf(got[0], wire.SpansDroppedKey)
	assert.Equal(t, int64(3+wire.MaxSpans+1+5), dropped.AsInt64())
}

func attrOf(s sdktrace.ReadOnlySpan, key attribute.Key) (attribute.Value, bool) {
	for _, a := range s.Attributes() {
		if a.Key == key {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

// The spans of a call together cost at most MaxSpanBytes: those past it
// are left out, however few they are.
func TestACallsSpansAreBoundedInBytes(t *testing.T) {
	start := time.Unix(1000, 0)
	big := strings.Repeat("x", wire.MaxAttributeValueLen)
	attrs := make([]*pluginv1.Attribute, wire.MaxSpanAttributes)
	for i := range attrs {
		attrs[i] = &pluginv1.Attribute{Key: strconv.Itoa(i) + strings.Repeat("k", wire.MaxAttributeKeyLen), Value: &pluginv1.Attribute_StringValue{StringValue: big}}
	}
	var spans []*pluginv1.Span
	for i := range 100 {
		spans = append(spans, &pluginv1.Span{SpanId: sid(i + 1), Name: "heavy", Attributes: attrs})
	}
	per := wire.SpanCost(spans[0])
	got := replay(t, spans, 0, start, start.Add(time.Second))
	assert.Equal(t, 1+wire.MaxSpanBytes/per, len(got))
	assert.Less(t, wire.MaxSpanBytes/per, 100, "the test must pass the budget")
}

// A number that is no number, or infinite, is recorded as its text: an
// exporter that writes JSON would fail on it, and with it on a whole
// batch of spans.
func TestANumberThatIsNoNumberIsRecordedAsText(t *testing.T) {
	double := func(key string, v float64) *pluginv1.Attribute {
		return &pluginv1.Attribute{Key: key, Value: &pluginv1.Attribute_DoubleValue{DoubleValue: v}}
	}
	attrs := []*pluginv1.Attribute{double("nan", math.NaN()), double("inf", math.Inf(1)), double("-inf", math.Inf(-1)), double("pi", math.Pi)}
	start := time.Unix(1000, 0)
	got := replay(t, []*pluginv1.Span{{SpanId: sid(1), Name: "n", Attributes: attrs,
		Events: []*pluginv1.SpanEvent{{Name: "e", Attributes: attrs}}}}, 0, start, start.Add(time.Second))
	require.Len(t, got, 2)
	want := []attribute.KeyValue{attribute.String("nan", "NaN"), attribute.String("inf", "+Inf"), attribute.String("-inf", "-Inf"), attribute.Float64("pi", math.Pi)}
	assert.Equal(t, want, got[1].Attributes())
	require.Len(t, got[1].Events(), 1)
	assert.Equal(t, want, got[1].Events()[0].Attributes)
}

// Spans whose parents point at each other are recorded, each loop broken
// at its first span, which goes under the call's span; a span that is
// its own parent goes there too.
func TestSpansWhoseParentsMakeALoopAreStillRecorded(t *testing.T) {
	start := time.Unix(1000, 0)
	got := replay(t, []*pluginv1.Span{
		{SpanId: sid(1), ParentSpanId: sid(3), Name: "a"},
		{SpanId: sid(2), ParentSpanId: sid(1), Name: "b"},
		{SpanId: sid(3), ParentSpanId: sid(2), Name: "c"},
		{SpanId: sid(4), ParentSpanId: sid(4), Name: "self"},
	}, 0, start, start.Add(time.Second))
	require.Len(t, got, 5)
	call, m := got[0], byName(got)
	assert.Equal(t, call.SpanContext().SpanID(), m["a"].Parent().SpanID())
	assert.Equal(t, m["a"].SpanContext().SpanID(), m["b"].Parent().SpanID())
	assert.Equal(t, m["b"].SpanContext().SpanID(), m["c"].Parent().SpanID())
	assert.Equal(t, call.SpanContext().SpanID(), m["self"].Parent().SpanID())
}

// invalidSpan is a span whose context is not valid, of a provider that
// records: what is started under it would be recorded, in a trace of its
// own.
type invalidSpan struct {
	trace.Span
	tp trace.TracerProvider
}

func (s invalidSpan) TracerProvider() trace.TracerProvider { return s.tp }

// notSampled samples no span named "call", and every other.
type notSampled struct{}

func (notSampled) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if p.Name == "call" {
		return sdktrace.SamplingResult{Decision: sdktrace.RecordOnly}
	}
	return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample}
}

func (notSampled) Description() string { return "notSampled" }

// Without a valid, sampled span in the call's context, a plugin's spans
// are not recorded at all, though the provider at hand records whatever
// it is given.
func TestSpansAreNotRecordedWithoutACallSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(notSampled{}))
	invalid := trace.ContextWithSpan(context.Background(), invalidSpan{Span: noop.Span{}, tp: tp})
	unsampled, call := tp.Tracer("test").Start(context.Background(), "call")
	require.True(t, call.IsRecording())
	require.False(t, call.SpanContext().IsSampled())
	tr := encode(t, &pluginv1.Trace{Spans: []*pluginv1.Span{{SpanId: sid(1), Name: "x"}}, DroppedSpans: 3})
	for _, ctx := range []context.Context{context.Background(), invalid, unsampled} {
		wire.RecordSpans(ctx, "scope", tr, time.Now(), time.Now())
	}
	call.End()
	ended := rec.Ended()
	require.Len(t, ended, 1, "the call's span alone")
	assert.Empty(t, ended[0].Attributes(), "nothing is counted either")
}

func TestCutKeepsCharactersWholeAndTextValid(t *testing.T) {
	assert.Equal(t, "ab", wire.Cut("abc", 2))
	assert.Equal(t, "a", wire.Cut("aü", 2), "ü is two bytes")
	assert.Equal(t, "a\uFFFDb", wire.Cut("a\xffb", 10))
	assert.Equal(t, "short", wire.Cut("short", 100))
}

// flood is prefix followed by field, each part(i), as many times as fit
// in size bytes; it returns how many.
func flood(size int, prefix []byte, field protowire.Number, part func(i int) []byte) (b []byte, n int) {
	b = prefix
	for len(b) < size {
		b = protowire.AppendBytes(protowire.AppendTag(b, field, protowire.BytesType), part(n))
		n++
	}
	return b, n
}

// nest is b in field.
func nest(field protowire.Number, b []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, field, protowire.BytesType), b)
}

func empty(int) []byte { return nil }

// answerWith is a plugin's answer, as it crosses, with trace tr.
func answerWith(tr []byte) []byte {
	answer := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "ok")
	return append(answer, nest(3, tr)...)
}

// allocated is how many bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A plugin that answers with millions of spans, or a span with millions
// of attributes or events, costs the host the answer's bytes, not a
// struct each: on a call it traces, whose spans it reads within the
// limits, and on one it does not, whose spans it does not read at all.
// The bound is generous; a struct each would cost tens of times the
// answer's size.
func TestAFloodOfSpansCostsTheHostBoundedMemory(t *testing.T) {
	id := slices.Clip(nest(1, sid(1))) // a span's ID, which each flood extends
	// As many empty spans as an answer holds; of the rest, enough that a
	// struct each would pass the bound many times over.
	emptySpans, n := flood(wire.MaxMessageSize-64, nil, 1, empty)
	idSpans, m := flood(1<<20, nil, 1, func(i int) []byte { return nest(1, sid(i+1)) })
	attributes, _ := flood(1<<20, id, 7, empty)
	events, _ := flood(1<<20, id, 8, empty)
	eventAttributes, _ := flood(1<<20, nil, 3, empty)
	for _, tc := range []struct {
		name    string
		trace   []byte
		spans   int // recorded
		dropped int
	}{
		{"empty spans", emptySpans, 0, n},
		{"spans", idSpans, wire.MaxSpans, m - wire.MaxSpans},
		{"attributes of a span", nest(1, attributes), 1, 0},
		{"events of a span", nest(1, events), 1, 0},
		{"attributes of an event", nest(1, append(id, nest(8, eventAttributes)...)), 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answer := answerWith(tc.trace)
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			traced, call := tp.Tracer("test").Start(context.Background(), "call")
			for _, ctx := range []context.Context{context.Background(), traced} {
				cost := allocated(func() {
					resp := &pluginv1.CallToolResponse{}
					require.NoError(t, proto.Unmarshal(answer, resp))
					wire.RecordSpans(ctx, "scope", resp.GetTrace(), time.Now(), time.Now())
				})
				assert.Less(t, cost, uint64(len(answer)+1<<20), "bytes allocated: the answer's, and at most a MiB more")
				t.Logf("traced %t: %d bytes allocated for an answer of %d", ctx != context.Background(), cost, len(answer))
			}
			call.End()
			got := rec.Ended()
			require.Len(t, got, 1+tc.spans)
			dropped, _ := attrOf(got[len(got)-1], wire.SpansDroppedKey)
			assert.Equal(t, int64(tc.dropped), dropped.AsInt64(), "each left out is counted")
		})
	}
	assert.Greater(t, n, 4_000_000, "millions of spans")
}
