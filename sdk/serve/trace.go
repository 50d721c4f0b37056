package serve

import (
	"context"
	"slices"
	"sync"

	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	"github.com/troupe-dev/troupe/sdk/wire"
	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// A plugin's spans go to the host with the answer of the call they were
// made in, and from there to wherever the host sends its own: the plugin
// never learns where that is, nor holds its credentials. The plugin's
// TracerProvider records a span only under a call's trace context (a
// span without a parent is never sampled), and its processor, collector,
// keeps each call's ended spans until the call answers.

// newTracerProvider is the plugin's TracerProvider: it records spans
// under the calls' trace contexts, within the protocol's limits, into c,
// and exports nothing.
func newTracerProvider(c *collector) *sdktrace.TracerProvider {
	return sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())),
		sdktrace.WithSpanProcessor(c),
		sdktrace.WithResource(resource.Empty()),
		sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{
			AttributeValueLengthLimit:   wire.MaxAttributeValueLen,
			AttributeCountLimit:         wire.MaxSpanAttributes,
			EventCountLimit:             wire.MaxSpanEvents,
			AttributePerEventCountLimit: wire.MaxEventAttributes,
			// Links name spans of traces the host does not see.
			LinkCountLimit: 0,
		}),
	)
}

// collector is the SpanProcessor of a plugin's TracerProvider: it keeps
// the spans that end within a call, for that call's answer.
type collector struct {
	mu sync.Mutex
	// calls is the call of each span started within one and not yet
	// ended, until the call answers.
	calls map[trace.SpanID]*callSpans
}

var _ sdktrace.SpanProcessor = (*collector)(nil)

func newCollector() *collector {
	return &collector{calls: map[trace.SpanID]*callSpans{}}
}

// callSpans are the spans of one call: those started and not yet ended,
// those ended, within the limits, and how many were left out. A span is
// open until it ends or the call answers, whichever comes first: then it
// is kept or counted as left out, under mu, in one step. done is set
// once the call has answered.
type callSpans struct {
	mu      sync.Mutex
	open    []trace.SpanID // in few, while they fit
	few     [4]trace.SpanID
	spans   []*pluginv1.Span
	cost    int
	started int
	dropped uint32
	done    bool
}

type callKey struct{}

// begin returns the context of a call, whose remote parent is the span
// context the host sent with it, if it sent one (in gRPC metadata; one
// sent on the lane is in ctx already), and the call's spans, nil when
// nothing the call makes is recorded.
func (c *collector) begin(ctx context.Context) (context.Context, *callSpans) {
	ctx = wire.IncomingTrace(ctx)
	sc := trace.SpanContextFromContext(ctx)
	if c == nil || !sc.IsRemote() || !sc.IsSampled() {
		return ctx, nil
	}
	cs := &callSpans{}
	cs.open = cs.few[:0]
	return context.WithValue(ctx, callKey{}, cs), cs
}

// finish returns what the answer of the call cs, which has answered,
// sends back of its trace: its spans and how many were left out, those
// still open now among them; nil when there is nothing to send. Spans of
// it that end later are not kept. It touches no other call's spans.
func (c *collector) finish(cs *callSpans) *pluginv1.Trace {
	if cs == nil {
		return nil
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.done = true
	c.mu.Lock()
	for _, id := range cs.open {
		delete(c.calls, id)
	}
	c.mu.Unlock()
	cs.dropped += uint32(len(cs.open))
	cs.open = nil
	if len(cs.spans) == 0 && cs.dropped == 0 {
		return nil
	}
	return &pluginv1.Trace{Spans: cs.spans, DroppedSpans: cs.dropped}
}

// OnStart ties s to its call: the one its parent context was given, or
// its parent span's, for a span started from a context that lost the
// call's.
func (c *collector) OnStart(parent context.Context, s sdktrace.ReadWriteSpan) {
	cs, _ := parent.Value(callKey{}).(*callSpans)
	if cs == nil {
		c.mu.Lock()
		cs = c.calls[s.Parent().SpanID()]
		c.mu.Unlock()
	}
	if cs == nil {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.done {
		return
	}
	cs.started++
	if cs.started > wire.MaxSpans {
		cs.dropped++ // it could not be kept anyway
		return
	}
	id := s.SpanContext().SpanID()
	cs.open = append(cs.open, id)
	c.mu.Lock() // under cs.mu: finish cannot miss it
	c.calls[id] = cs
	c.mu.Unlock()
}

// OnEnd keeps s for its call's answer, within the limits, unless the
// call has answered, and counted s as left out, already.
func (c *collector) OnEnd(s sdktrace.ReadOnlySpan) {
	id := s.SpanContext().SpanID()
	c.mu.Lock()
	cs := c.calls[id]
	delete(c.calls, id)
	c.mu.Unlock()
	if cs == nil {
		return
	}
	w := spanToWire(s)
	cost := wire.SpanCost(w)
	cs.mu.Lock()
	defer cs.mu.Unlock()
	i := slices.Index(cs.open, id)
	if i < 0 {
		return
	}
	cs.open[i] = cs.open[len(cs.open)-1]
	cs.open = cs.open[:len(cs.open)-1]
	if len(cs.spans) == wire.MaxSpans || cs.cost+cost > wire.MaxSpanBytes {
		cs.dropped++
		return
	}
	cs.spans = append(cs.spans, w)
	cs.cost += cost
}

// answerTrace gives answer m, by set, its trace t encoded; or t without
// its spans, counted as left out, when with them m would be larger than
// the protocol carries. It sets none when t is nil.
func answerTrace(m proto.Message, t *pluginv1.Trace, set func([]byte)) {
	if t == nil {
		return
	}
	set(encodeTrace(t))
	if len(t.GetSpans()) > 0 && proto.Size(m)+1 > wire.MaxMessageSize {
		set(encodeTrace(leftOut(t)))
	}
}

// encodeTrace is t as an answer carries it.
func encodeTrace(t *pluginv1.Trace) []byte {
	b, err := proto.Marshal(t)
	if err != nil { // only text that is not UTF-8, which spanToWire never makes
		b, _ = proto.Marshal(leftOut(t))
	}
	return b
}

// leftOut is t without its spans, counted as left out.
func leftOut(t *pluginv1.Trace) *pluginv1.Trace {
	return &pluginv1.Trace{DroppedSpans: t.GetDroppedSpans() + uint32(len(t.GetSpans()))}
}

func (c *collector) Shutdown(context.Context) error   { return nil }
func (c *collector) ForceFlush(context.Context) error { return nil }

// spanToWire is s as the protocol carries it, cut to its limits.
func spanToWire(s sdktrace.ReadOnlySpan) *pluginv1.Span {
	id, parent := s.SpanContext().SpanID(), s.Parent().SpanID()
	w := &pluginv1.Span{
		SpanId: id[:], Name: wire.Cut(s.Name(), wire.MaxSpanNameLen), Kind: int32(s.SpanKind()),
		StartUnixNano: s.StartTime().UnixNano(), EndUnixNano: s.EndTime().UnixNano(),
		Attributes: wire.AttributesToWire(s.Attributes(), wire.MaxSpanAttributes),
		StatusCode: int32(s.Status().Code), StatusMessage: wire.Cut(s.Status().Description, wire.MaxAttributeValueLen),
	}
	if parent.IsValid() {
		w.ParentSpanId = parent[:]
	}
	events := s.Events()
	for _, e := range events[:min(len(events), wire.MaxSpanEvents)] {
		w.Events = append(w.Events, &pluginv1.SpanEvent{
			Name: wire.Cut(e.Name, wire.MaxSpanNameLen), TimeUnixNano: e.Time.UnixNano(),
			Attributes: wire.AttributesToWire(e.Attributes, wire.MaxEventAttributes),
		})
	}
	return w
}
