package wire

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// The field numbers readTrace reads are plugin.proto's.
func TestTheTraceReaderKnowsTheProtocolsFields(t *testing.T) {
	for _, tc := range []struct {
		m      proto.Message
		fields map[protoreflect.Name]protowire.Number
	}{
		{&pluginv1.Trace{}, map[protoreflect.Name]protowire.Number{"spans": fieldTraceSpans, "dropped_spans": fieldTraceDropped}},
		{&pluginv1.Span{}, map[protoreflect.Name]protowire.Number{
			"span_id": fieldSpanID, "parent_span_id": fieldSpanParentID, "name": fieldSpanName, "kind": fieldSpanKind,
			"start_unix_nano": fieldSpanStart, "end_unix_nano": fieldSpanEnd, "attributes": fieldSpanAttributes,
			"events": fieldSpanEvents, "status_code": fieldSpanStatusCode, "status_message": fieldSpanStatusMessage,
		}},
		{&pluginv1.SpanEvent{}, map[protoreflect.Name]protowire.Number{"name": fieldEventName, "time_unix_nano": fieldEventTime, "attributes": fieldEventAttributes}},
		{&pluginv1.Attribute{}, map[protoreflect.Name]protowire.Number{
			"key": fieldAttributeKey, "string_value": fieldAttributeString, "int_value": fieldAttributeInt,
			"double_value": fieldAttributeDouble, "bool_value": fieldAttributeBool,
		}},
	} {
		fields := tc.m.ProtoReflect().Descriptor().Fields()
		assert.Equal(t, len(tc.fields), fields.Len(), "%T: every field is read", tc.m)
		for name, num := range tc.fields {
			f := fields.ByName(name)
			require.NotNil(t, f, "%T.%s", tc.m, name)
			assert.Equal(t, f.Number(), num, "%T.%s", tc.m, name)
		}
	}
}

// A span as the plugin's side makes it is read back whole, and costs
// the host what it cost the plugin; one past the limits is cut as it is
// read, and costs what SpanCost says.
func TestASpanIsReadAsItWasSentWithinTheLimits(t *testing.T) {
	attrs := []*pluginv1.Attribute{
		{Key: "s", Value: &pluginv1.Attribute_StringValue{StringValue: "text"}},
		{Key: "i", Value: &pluginv1.Attribute_IntValue{IntValue: -7}},
		{Key: "d", Value: &pluginv1.Attribute_DoubleValue{DoubleValue: math.Pi}},
		{Key: "b", Value: &pluginv1.Attribute_BoolValue{BoolValue: true}},
	}
	span := &pluginv1.Span{SpanId: []byte{1, 2, 3, 4, 5, 6, 7, 8}, ParentSpanId: []byte{8, 7, 6, 5, 4, 3, 2, 1},
		Name: "walk", Kind: 3, StartUnixNano: 10, EndUnixNano: 20, Attributes: attrs, StatusCode: 1, StatusMessage: "broke",
		Events: []*pluginv1.SpanEvent{{Name: "found", TimeUnixNano: 15, Attributes: attrs[:2]}}}
	b, err := proto.Marshal(span)
	require.NoError(t, err)
	_, cost, ok := spanHead(b)
	require.True(t, ok)
	assert.Equal(t, SpanCost(span), cost)
	assert.True(t, proto.Equal(span, readSpan(b)), "read whole")

	long := strings.Repeat("ü", 2000)
	many := make([]*pluginv1.Attribute, 100)
	for i := range many {
		many[i] = &pluginv1.Attribute{Key: long, Value: &pluginv1.Attribute_StringValue{StringValue: long}}
	}
	events := make([]*pluginv1.SpanEvent, 100)
	for i := range events {
		events[i] = &pluginv1.SpanEvent{Name: long, Attributes: many}
	}
	big := &pluginv1.Span{SpanId: span.SpanId, Name: long, StatusMessage: long, Attributes: many, Events: events}
	b, err = proto.Marshal(big)
	require.NoError(t, err)
	_, cost, ok = spanHead(b)
	require.True(t, ok)
	assert.Equal(t, SpanCost(big), cost)
	got := readSpan(b)
	assert.Equal(t, Cut(long, MaxSpanNameLen), got.GetName())
	assert.Equal(t, Cut(long, MaxAttributeValueLen), got.GetStatusMessage())
	require.Len(t, got.GetAttributes(), MaxSpanAttributes)
	assert.Equal(t, Cut(long, MaxAttributeKeyLen), got.GetAttributes()[0].GetKey())
	assert.Equal(t, Cut(long, MaxAttributeValueLen), got.GetAttributes()[0].GetStringValue())
	require.Len(t, got.GetEvents(), MaxSpanEvents)
	assert.Len(t, got.GetEvents()[0].GetAttributes(), MaxEventAttributes)
	assert.LessOrEqual(t, SpanCost(got), cost)
}

// A trace that is malformed part of the way is read up to there; a span
// that is malformed is left out.
func TestAMalformedTraceIsReadUpToWhereItBreaks(t *testing.T) {
	tr := &pluginv1.Trace{Spans: []*pluginv1.Span{
		{SpanId: []byte{1, 1, 1, 1, 1, 1, 1, 1}, Name: "a"},
		{SpanId: []byte{2, 2, 2, 2, 2, 2, 2, 2}, Name: "b"},
	}}
	b, err := proto.Marshal(tr)
	require.NoError(t, err)
	spans, dropped := readTrace(b[:len(b)-1])
	require.Len(t, spans, 1)
	assert.Equal(t, "a", spans[0].GetName())
	assert.Zero(t, dropped)

	bad := protowire.AppendBytes(protowire.AppendTag(nil, fieldTraceSpans, protowire.BytesType), []byte{0x0a, 0x08, 1})
	spans, dropped = readTrace(append(bad, b...))
	assert.Len(t, spans, 2)
	assert.Equal(t, 1, dropped)
}
