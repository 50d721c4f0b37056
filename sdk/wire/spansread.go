package wire

import (
	"math"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"

	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// A plugin's answer carries its spans encoded (CallToolResponse.trace),
// and the host reads them here, with protowire, rather than with the
// generated decoder: that one would make a struct of every span, event
// and attribute the answer holds, millions of them in an answer of empty
// ones, before any limit applied. readTrace makes at most MaxSpans spans,
// each within the limits, and only scans the rest.

// Field numbers of the Trace message and of the messages in it, as
// plugin.proto gives them.
const (
	fieldTraceSpans   protowire.Number = 1
	fieldTraceDropped protowire.Number = 2

	fieldSpanID            protowire.Number = 1
	fieldSpanParentID      protowire.Number = 2
	fieldSpanName          protowire.Number = 3
	fieldSpanKind          protowire.Number = 4
	fieldSpanStart         protowire.Number = 5
	fieldSpanEnd           protowire.Number = 6
	fieldSpanAttributes    protowire.Number = 7
	fieldSpanEvents        protowire.Number = 8
	fieldSpanStatusCode    protowire.Number = 9
	fieldSpanStatusMessage protowire.Number = 10

	fieldEventName       protowire.Number = 1
	fieldEventTime       protowire.Number = 2
	fieldEventAttributes protowire.Number = 3

	fieldAttributeKey    protowire.Number = 1
	fieldAttributeString protowire.Number = 2
	fieldAttributeInt    protowire.Number = 3
	fieldAttributeDouble protowire.Number = 4
	fieldAttributeBool   protowire.Number = 5
)

// wireField is one field of an encoded message: its value is bytes for a
// length-delimited field, n for a varint or a fixed64.
type wireField struct {
	num   protowire.Number
	typ   protowire.Type
	bytes []byte
	n     uint64
}

func (f wireField) is(num protowire.Number, typ protowire.Type) bool {
	return f.num == num && f.typ == typ
}

// fields reads an encoded message's fields, one at a time. The bytes of
// a length-delimited field are b's own, never copied.
type fields struct {
	b []byte
	// bad: the message is malformed where reading stopped.
	bad bool
}

// next reads the next field; it returns false at the message's end, and
// where it is malformed.
func (r *fields) next() (f wireField, ok bool) {
	if len(r.b) == 0 {
		return f, false
	}
	num, typ, n := protowire.ConsumeTag(r.b)
	if n >= 0 {
		r.b = r.b[n:]
		f.num, f.typ = num, typ
		switch typ {
		case protowire.BytesType:
			f.bytes, n = protowire.ConsumeBytes(r.b)
		case protowire.VarintType:
			f.n, n = protowire.ConsumeVarint(r.b)
		case protowire.Fixed64Type:
			f.n, n = protowire.ConsumeFixed64(r.b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, r.b)
		}
	}
	if n < 0 {
		r.b, r.bad = nil, true
		return f, false
	}
	r.b = r.b[n:]
	return f, true
}

// readTrace reads an encoded Trace that a plugin sent, and returns the
// spans within the limits: at most MaxSpans, each with a valid ID of its
// own, and MaxSpanBytes of them together (see SpanCost), each cut to the
// limits as it is read; the rest are scanned, never made. dropped counts
// the spans it left out, and those the plugin says it left out. What
// follows a malformed part of the trace is not read.
func readTrace(b []byte) (kept []*pluginv1.Span, dropped int) {
	ids := map[trace.SpanID]bool{}
	budget := MaxSpanBytes
	var claimed uint32
	r := fields{b: b}
	for f, ok := r.next(); ok; f, ok = r.next() {
		switch {
		case f.is(fieldTraceSpans, protowire.BytesType):
			if len(kept) == MaxSpans {
				dropped++
				continue
			}
			id, cost, ok := spanHead(f.bytes)
			if !ok || ids[id] || cost > budget {
				dropped++
				continue
			}
			budget -= cost
			ids[id] = true
			kept = append(kept, readSpan(f.bytes))
		case f.is(fieldTraceDropped, protowire.VarintType):
			claimed = uint32(f.n)
		}
	}
	return kept, dropped + int(claimed)
}

// spanHead reads an encoded span's ID and its cost, which is SpanCost's
// of the span it encodes, without making anything of it; ok is false
// when the span has no valid ID, or is malformed.
func spanHead(b []byte) (id trace.SpanID, cost int, ok bool) {
	var rawID []byte
	var name, message, attributes, events int
	cost = attributeCost
	r := fields{b: b}
	for f, more := r.next(); more; f, more = r.next() {
		switch {
		case f.is(fieldSpanID, protowire.BytesType):
			rawID = f.bytes
		case f.is(fieldSpanName, protowire.BytesType):
			name = len(f.bytes)
		case f.is(fieldSpanStatusMessage, protowire.BytesType):
			message = len(f.bytes)
		case f.is(fieldSpanAttributes, protowire.BytesType) && attributes < MaxSpanAttributes:
			attributes++
			cost += attributeHeadCost(f.bytes)
		case f.is(fieldSpanEvents, protowire.BytesType) && events < MaxSpanEvents:
			events++
			cost += eventHeadCost(f.bytes)
		}
	}
	if r.bad {
		return id, 0, false
	}
	id, ok = spanID(rawID)
	return id, cost + min(name, MaxSpanNameLen) + min(message, MaxAttributeValueLen), ok
}

// eventHeadCost is what an encoded event costs in its span's SpanCost.
func eventHeadCost(b []byte) int {
	var name, attributes int
	cost := attributeCost
	r := fields{b: b}
	for f, ok := r.next(); ok; f, ok = r.next() {
		switch {
		case f.is(fieldEventName, protowire.BytesType):
			name = len(f.bytes)
		case f.is(fieldEventAttributes, protowire.BytesType) && attributes < MaxEventAttributes:
			attributes++
			cost += attributeHeadCost(f.bytes)
		}
	}
	return cost + min(name, MaxSpanNameLen)
}

// attributeHeadCost is what an encoded attribute costs in its span's
// SpanCost: its text value's is the last value's of its fields, when that
// is text.
func attributeHeadCost(b []byte) int {
	var key, text int
	r := fields{b: b}
	for f, ok := r.next(); ok; f, ok = r.next() {
		switch {
		case f.is(fieldAttributeKey, protowire.BytesType):
			key = len(f.bytes)
		case f.is(fieldAttributeString, protowire.BytesType):
			text = len(f.bytes)
		case f.is(fieldAttributeInt, protowire.VarintType), f.is(fieldAttributeBool, protowire.VarintType),
			f.is(fieldAttributeDouble, protowire.Fixed64Type):
			text = 0
		}
	}
	return attributeCost + min(key, MaxAttributeKeyLen) + min(text, MaxAttributeValueLen)
}

// readSpan makes the span that b encodes, whose head spanHead has read:
// its text cut to the limits, at most MaxSpanAttributes attributes and
// MaxSpanEvents events.
func readSpan(b []byte) *pluginv1.Span {
	s := &pluginv1.Span{}
	r := fields{b: b}
	for f, ok := r.next(); ok; f, ok = r.next() {
		switch {
		case f.is(fieldSpanID, protowire.BytesType):
			s.SpanId = f.bytes
		case f.is(fieldSpanParentID, protowire.BytesType):
			s.ParentSpanId = f.bytes
		case f.is(fieldSpanName, protowire.BytesType):
			s.Name = readText(f.bytes, MaxSpanNameLen)
		case f.is(fieldSpanKind, protowire.VarintType):
			s.Kind = int32(f.n)
		case f.is(fieldSpanStart, protowire.VarintType):
			s.StartUnixNano = int64(f.n)
		case f.is(fieldSpanEnd, protowire.VarintType):
			s.EndUnixNano = int64(f.n)
		case f.is(fieldSpanAttributes, protowire.BytesType) && len(s.Attributes) < MaxSpanAttributes:
			s.Attributes = append(s.Attributes, readAttribute(f.bytes))
		case f.is(fieldSpanEvents, protowire.BytesType) && len(s.Events) < MaxSpanEvents:
			s.Events = append(s.Events, readEvent(f.bytes))
		case f.is(fieldSpanStatusCode, protowire.VarintType):
			s.StatusCode = int32(f.n)
		case f.is(fieldSpanStatusMessage, protowire.BytesType):
			s.StatusMessage = readText(f.bytes, MaxAttributeValueLen)
		}
	}
	return s
}

func readEvent(b []byte) *pluginv1.SpanEvent {
	e := &pluginv1.SpanEvent{}
	r := fields{b: b}
	for f, ok := r.next(); ok; f, ok = r.next() {
		switch {
		case f.is(fieldEventName, protowire.BytesType):
			e.Name = readText(f.bytes, MaxSpanNameLen)
		case f.is(fieldEventTime, protowire.VarintType):
			e.TimeUnixNano = int64(f.n)
		case f.is(fieldEventAttributes, protowire.BytesType) && len(e.Attributes) < MaxEventAttributes:
			e.Attributes = append(e.Attributes, readAttribute(f.bytes))
		}
	}
	return e
}

func readAttribute(b []byte) *pluginv1.Attribute {
	a := &pluginv1.Attribute{}
	r := fields{b: b}
	for f, ok := r.next(); ok; f, ok = r.next() {
		switch {
		case f.is(fieldAttributeKey, protowire.BytesType):
			a.Key = readText(f.bytes, MaxAttributeKeyLen)
		case f.is(fieldAttributeString, protowire.BytesType):
			a.Value = &pluginv1.Attribute_StringValue{StringValue: readText(f.bytes, MaxAttributeValueLen)}
		case f.is(fieldAttributeInt, protowire.VarintType):
			a.Value = &pluginv1.Attribute_IntValue{IntValue: int64(f.n)}
		case f.is(fieldAttributeDouble, protowire.Fixed64Type):
			a.Value = &pluginv1.Attribute_DoubleValue{DoubleValue: math.Float64frombits(f.n)}
		case f.is(fieldAttributeBool, protowire.VarintType):
			a.Value = &pluginv1.Attribute_BoolValue{BoolValue: f.n != 0}
		}
	}
	return a
}

// readText is b as text cut to n bytes (see Cut); only what can be kept
// of it is copied.
func readText(b []byte, n int) string {
	return Cut(string(b[:min(len(b), n+utf8.UTFMax)]), n)
}
