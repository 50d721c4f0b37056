package serve

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/troupe-dev/troupe/sdk/wire"
	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// hostCall is the context of a call whose host sent a sampled trace
// context in gRPC metadata, and that context.
func hostCall(sampled bool) (context.Context, trace.SpanContext) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		SpanID:  trace.SpanID{9, 9, 9, 9, 9, 9, 9, 9},
	})
	if sampled {
		sc = sc.WithTraceFlags(trace.FlagsSampled)
	}
	out := wire.OutgoingTrace(trace.ContextWithSpanContext(context.Background(), sc))
	md, _ := metadata.FromOutgoingContext(out)
	return metadata.NewIncomingContext(context.Background(), md), sc
}

// The spans a call makes, and theirs, are its answer's, each naming its
// parent: the host's span for the first, its own for the rest; a span
// started from a context that lost the call still belongs to it, by its
// parent.
func TestACallsSpansAreCollectedForItsAnswer(t *testing.T) {
	c := newCollector()
	tracer := newTracerProvider(c).Tracer("t")
	in, host := hostCall(true)
	ctx, spans := c.begin(in)
	require.NotNil(t, spans)
	_, outer := tracer.Start(ctx, "outer")
	_, inner := tracer.Start(trace.ContextWithSpan(context.Background(), outer), "inner")
	inner.End()
	outer.End()
	_, stray := tracer.Start(context.Background(), "stray") // under no call: not sampled
	stray.End()
	tr := c.finish(spans)
	got := tr.GetSpans()
	require.Len(t, got, 2)
	assert.Zero(t, tr.GetDroppedSpans())
	assert.Equal(t, "inner", got[0].GetName())
	assert.Equal(t, "outer", got[1].GetName())
	hostID := host.SpanID()
	assert.Equal(t, hostID[:], got[1].GetParentSpanId())
	assert.Equal(t, got[1].GetSpanId(), got[0].GetParentSpanId())
	assert.Empty(t, c.calls, "nothing is left open")
}

// A call whose host sent no trace context, or one not sampled, collects
// nothing, and its spans are not recorded.
func TestACallWithoutASampledTraceContextCollectsNothing(t *testing.T) {
	c := newCollector()
	ctx, spans := c.begin(context.Background())
	assert.Nil(t, spans)
	assert.False(t, trace.SpanContextFromContext(ctx).IsValid())
	in, _ := hostCall(false)
	ctx, spans = c.begin(in)
	assert.Nil(t, spans)
	_, span := newTracerProvider(c).Tracer("t").Start(ctx, "x")
	assert.False(t, span.IsRecording())
}

// A call keeps at most MaxSpans spans, and counts the rest, those still
// open as it answers among them.
func TestACallKeepsAtMostMaxSpans(t *testing.T) {
	c := newCollector()
	tracer := newTracerProvider(c).Tracer("t")
	in, _ := hostCall(true)
	ctx, spans := c.begin(in)
	_, open := tracer.Start(ctx, "open")
	for range wire.MaxSpans + 10 {
		_, s := tracer.Start(ctx, "s")
		s.End()
	}
	tr := c.finish(spans)
	assert.Len(t, tr.GetSpans(), wire.MaxSpans-1, "the open span holds a place")
	assert.Equal(t, uint32(10+1+1), tr.GetDroppedSpans())
	open.End() // after the answer: not kept
	assert.Len(t, spans.spans, wire.MaxSpans-1)
}

// An answer whose spans would make it larger than the protocol carries
// goes without them.
func TestSpansThatWouldNotFitAreLeftOff(t *testing.T) {
	tr := &pluginv1.Trace{Spans: []*pluginv1.Span{{Name: strings.Repeat("y", 200)}}, DroppedSpans: 2}
	resp := &pluginv1.CallToolResponse{Text: strings.Repeat("x", wire.MaxMessageSize-100)}
	answerTrace(resp, tr, func(b []byte) { resp.Trace = b })
	got := &pluginv1.Trace{}
	require.NoError(t, proto.Unmarshal(resp.GetTrace(), got))
	assert.True(t, proto.Equal(&pluginv1.Trace{DroppedSpans: 3}, got), "the spans are counted as left out")

	resp = &pluginv1.CallToolResponse{Text: "small"}
	answerTrace(resp, tr, func(b []byte) { resp.Trace = b })
	require.NoError(t, proto.Unmarshal(resp.GetTrace(), got))
	assert.True(t, proto.Equal(tr, got))
}

// A span that ends as its call answers is either sent with the answer or
// counted as left out, never lost between the two.
func TestASpanEndingAsItsCallAnswersIsSentOrCounted(t *testing.T) {
	c := newCollector()
	tracer := newTracerProvider(c).Tracer("t")
	in, _ := hostCall(true)
	for i := range 2000 {
		ctx, spans := c.begin(in)
		_, span := tracer.Start(ctx, "racing")
		start, answered := make(chan struct{}), make(chan *pluginv1.Trace)
		go func() {
			<-start
			answered <- c.finish(spans)
		}()
		close(start)
		span.End()
		tr := <-answered
		require.Equal(t, 1, len(tr.GetSpans())+int(tr.GetDroppedSpans()), "call %d: the span is sent or counted", i)
	}
}

// BenchmarkCallAmongOpenSpans: a call that makes one span and answers,
// while other calls in flight hold spans open: its cost must not grow
// with theirs.
func BenchmarkCallAmongOpenSpans(b *testing.B) {
	for _, others := range []int{0, 10_000} {
		b.Run(fmt.Sprintf("open-%d", others), func(b *testing.B) {
			c := newCollector()
			tracer := newTracerProvider(c).Tracer("t")
			in, _ := hostCall(true)
			for range others / wire.MaxSpans {
				ctx, _ := c.begin(in)
				for range wire.MaxSpans {
					_, _ = tracer.Start(ctx, "open") // held open
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				ctx, spans := c.begin(in)
				_, span := tracer.Start(ctx, "s")
				span.End()
				c.finish(spans)
			}
		})
	}
}
