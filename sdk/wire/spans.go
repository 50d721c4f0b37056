package wire

import (
	"context"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// Limits of the spans a plugin returns with one call. The plugin's side
// keeps to them as it collects its spans; the host enforces them again as
// it records them, since a plugin's answer is not to be trusted. What
// goes past them is left out, and counted.
const (
	// MaxSpans bounds the spans of one call.
	MaxSpans = 256
	// MaxSpanBytes bounds the text of one call's spans together (see
	// SpanCost).
	MaxSpanBytes = 1 << 20
	// MaxSpanNameLen bounds a span's or an event's name, in bytes.
	MaxSpanNameLen = 256
	// MaxSpanAttributes bounds a span's attributes, MaxEventAttributes
	// an event's.
	MaxSpanAttributes  = 32
	MaxEventAttributes = 8
	// MaxSpanEvents bounds a span's events.
	MaxSpanEvents = 32
	// MaxAttributeKeyLen bounds an attribute's key, in bytes.
	MaxAttributeKeyLen = 128
	// MaxAttributeValueLen bounds a text value and a status message, in
	// bytes.
	MaxAttributeValueLen = 1024
)

// attributeCost is what an attribute costs beyond its text, and what a
// span and an event cost beyond theirs.
const attributeCost = 16

// SpanCost is what s counts against MaxSpanBytes once cut to the limits:
// its text, and a little for each part.
func SpanCost(s *pluginv1.Span) int {
	n := attributeCost + min(len(s.GetName()), MaxSpanNameLen) + min(len(s.GetStatusMessage()), MaxAttributeValueLen) +
		attributesCost(s.GetAttributes(), MaxSpanAttributes)
	events := s.GetEvents()
	for _, e := range events[:min(len(events), MaxSpanEvents)] {
		n += attributeCost + min(len(e.GetName()), MaxSpanNameLen) + attributesCost(e.GetAttributes(), MaxEventAttributes)
	}
	return n
}

func attributesCost(as []*pluginv1.Attribute, limit int) int {
	n := 0
	for _, a := range as[:min(len(as), limit)] {
		n += attributeCost + min(len(a.GetKey()), MaxAttributeKeyLen) + min(len(a.GetStringValue()), MaxAttributeValueLen)
	}
	return n
}

// Cut returns s cut to at most n bytes, at a character's boundary, and
// valid UTF-8 (which the protocol's text must be).
func Cut(s string, n int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) > n {
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n]
	}
	return s
}

// spanID is b as a span ID, when it is a valid one.
func spanID(b []byte) (trace.SpanID, bool) {
	if len(b) != len(trace.SpanID{}) {
		return trace.SpanID{}, false
	}
	id := trace.SpanID(b)
	return id, id.IsValid()
}

// AttributesToWire converts attributes, at most limit of them
// (MaxSpanAttributes for a span's, MaxEventAttributes for an event's),
// keys and text cut to their limits; a value that is neither text, a
// number nor a boolean crosses as its text.
func AttributesToWire(kvs []attribute.KeyValue, limit int) []*pluginv1.Attribute {
	kvs = kvs[:min(len(kvs), limit)]
	if len(kvs) == 0 {
		return nil
	}
	out := make([]*pluginv1.Attribute, len(kvs))
	for i, kv := range kvs {
		a := &pluginv1.Attribute{Key: Cut(string(kv.Key), MaxAttributeKeyLen)}
		switch kv.Value.Type() {
		case attribute.BOOL:
			a.Value = &pluginv1.Attribute_BoolValue{BoolValue: kv.Value.AsBool()}
		case attribute.INT64:
			a.Value = &pluginv1.Attribute_IntValue{IntValue: kv.Value.AsInt64()}
		case attribute.FLOAT64:
			a.Value = &pluginv1.Attribute_DoubleValue{DoubleValue: kv.Value.AsFloat64()}
		default:
			a.Value = &pluginv1.Attribute_StringValue{StringValue: Cut(kv.Value.String(), MaxAttributeValueLen)}
		}
		out[i] = a
	}
	return out
}

// attributesFromWire converts a plugin's attributes, at most limit of
// them, cut to their limits; one without a key or a value is left out.
func attributesFromWire(as []*pluginv1.Attribute, limit int) []attribute.KeyValue {
	as = as[:min(len(as), limit)]
	if len(as) == 0 {
		return nil
	}
	out := make([]attribute.KeyValue, 0, len(as))
	for _, a := range as {
		key := attribute.Key(Cut(a.GetKey(), MaxAttributeKeyLen))
		if key == "" {
			continue
		}
		switch v := a.GetValue().(type) {
		case *pluginv1.Attribute_StringValue:
			out = append(out, key.String(Cut(v.StringValue, MaxAttributeValueLen)))
		case *pluginv1.Attribute_IntValue:
			out = append(out, key.Int64(v.IntValue))
		case *pluginv1.Attribute_DoubleValue:
			out = append(out, doubleAttribute(key, v.DoubleValue))
		case *pluginv1.Attribute_BoolValue:
			out = append(out, key.Bool(v.BoolValue))
		}
	}
	return out
}

// doubleAttribute is a plugin's number as an attribute: NaN and the
// infinities as their text ("NaN", "+Inf", "-Inf"), which an exporter
// that writes JSON, which has no such numbers, would fail on, and with
// them on every span of its batch.
func doubleAttribute(key attribute.Key, v float64) attribute.KeyValue {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return key.String(strconv.FormatFloat(v, 'g', -1, 64))
	}
	return key.Float64(v)
}

// window is the time a call took, as its caller saw it: what a plugin
// says of its spans' times is moved into it.
type window struct{ start, end time.Time }

func (w window) clamp(unixNano int64) time.Time {
	t := time.Unix(0, unixNano)
	switch {
	case unixNano <= 0 || t.Before(w.start):
		return w.start
	case t.After(w.end):
		return w.end
	}
	return t
}

// SpansDroppedKey is the attribute of a call's span that counts the
// spans the plugin made in the call that are not recorded, because they
// passed the limits (MaxSpans and kin).
const SpansDroppedKey = attribute.Key("troupe.plugin.spans_dropped")

// RecordSpans records the spans of a plugin's answer to a call that began
// at start and ended at end (its encoded Trace) under the span of ctx,
// the call's, with the tracer named scope of that span's TracerProvider:
// their names, kinds, attributes, events and statuses, each at the times
// the plugin gave, moved into the call's time, and each under its parent
// among them, or under ctx's span when it names none of them. What
// passes the limits (MaxSpans and kin) is cut or left out as it is read;
// the spans left out, by the plugin or here, are counted in
// SpansDroppedKey on ctx's span. When a call with ctx is not Traced (its
// span is not valid, or not sampled), the trace is not read at all, and
// nothing is recorded.
func RecordSpans(ctx context.Context, scope string, encoded []byte, start, end time.Time) {
	if len(encoded) == 0 || !Traced(ctx) {
		return
	}
	spans, dropped := readTrace(encoded)
	replaySpans(ctx, scope, spans, start, end)
	if dropped > 0 {
		trace.SpanFromContext(ctx).SetAttributes(SpansDroppedKey.Int(dropped))
	}
}

// replaySpans records spans, read within the limits, as RecordSpans
// says.
func replaySpans(ctx context.Context, scope string, spans []*pluginv1.Span, start, end time.Time) {
	if len(spans) == 0 {
		return
	}
	if end.Before(start) {
		end = start
	}
	tracer := trace.SpanFromContext(ctx).TracerProvider().Tracer(scope)
	w := window{start: start, end: end}
	made := make(map[trace.SpanID]context.Context, len(spans))
	for _, s := range spanOrder(spans) {
		parent := ctx
		if id, ok := spanID(s.GetParentSpanId()); ok && made[id] != nil {
			parent = made[id]
		}
		id, _ := spanID(s.GetSpanId())
		made[id] = replaySpan(parent, tracer, s, w)
	}
}

// spanOrder orders spans, whose IDs are valid and their own, so that
// each comes after its parent: first those whose parent is none of them,
// each followed, breadth first, by what is below it; then, for parents
// that only point at each other (which a well-behaved plugin never
// sends), the same from the first of each such loop, which is then taken
// to have no parent.
func spanOrder(spans []*pluginv1.Span) []*pluginv1.Span {
	index := make(map[trace.SpanID]int, len(spans))
	for i, s := range spans {
		id, _ := spanID(s.GetSpanId())
		index[id] = i
	}
	children := make([][]int, len(spans))
	var roots []int
	for i, s := range spans {
		pid, ok := spanID(s.GetParentSpanId())
		p, known := index[pid]
		if !ok || !known || p == i {
			roots = append(roots, i)
			continue
		}
		children[p] = append(children[p], i)
	}
	order := make([]*pluginv1.Span, 0, len(spans))
	seen := make([]bool, len(spans))
	visit := func(root int) {
		seen[root] = true
		order = append(order, spans[root])
		queue := []int{root}
		for len(queue) > 0 {
			i := queue[0]
			queue = queue[1:]
			for _, c := range children[i] {
				if !seen[c] {
					seen[c] = true
					order = append(order, spans[c])
					queue = append(queue, c)
				}
			}
		}
	}
	for _, r := range roots {
		visit(r)
	}
	for i := range spans {
		if !seen[i] {
			visit(i)
		}
	}
	return order
}

// replaySpan records s under the span of ctx, and returns the context of
// the span it made.
func replaySpan(ctx context.Context, tracer trace.Tracer, s *pluginv1.Span, w window) context.Context {
	kind := trace.SpanKind(s.GetKind())
	if kind < trace.SpanKindInternal || kind > trace.SpanKindConsumer {
		kind = trace.SpanKindInternal
	}
	start := w.clamp(s.GetStartUnixNano())
	ctx, span := tracer.Start(ctx, Cut(s.GetName(), MaxSpanNameLen), trace.WithTimestamp(start),
		trace.WithSpanKind(kind), trace.WithAttributes(attributesFromWire(s.GetAttributes(), MaxSpanAttributes)...))
	events := s.GetEvents()
	for _, e := range events[:min(len(events), MaxSpanEvents)] {
		span.AddEvent(Cut(e.GetName(), MaxSpanNameLen), trace.WithTimestamp(w.clamp(e.GetTimeUnixNano())),
			trace.WithAttributes(attributesFromWire(e.GetAttributes(), MaxEventAttributes)...))
	}
	switch s.GetStatusCode() {
	case int32(codes.Error):
		span.SetStatus(codes.Error, Cut(s.GetStatusMessage(), MaxAttributeValueLen))
	case int32(codes.Ok):
		span.SetStatus(codes.Ok, "")
	}
	end := w.clamp(s.GetEndUnixNano())
	if end.Before(start) {
		end = start
	}
	span.End(trace.WithTimestamp(end))
	return ctx
}
