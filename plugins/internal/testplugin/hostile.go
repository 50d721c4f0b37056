package main

import (
	"context"
	"encoding/binary"
	"strings"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/troupe-dev/troupe/sdk/wire"
	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// serveHostileSpans serves, without the SDK, a plugin whose tool "spans"
// answers with spans that pass every limit: too many, too large, times
// outside the call, parents that do not exist or point at each other,
// IDs that are no IDs; and whose tool "empty-spans" answers with as many
// empty spans as an answer holds, millions. Both answer with them
// whether the call was traced or not.
func serveHostileSpans() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: wire.Handshake,
		VersionedPlugins: wire.PluginSets(&wire.Plugin{
			Serve: func(*plugin.GRPCBroker) pluginv1.PluginServer { return hostile{} },
		}),
		GRPCServer: plugin.DefaultGRPCServer,
	})
}

type hostile struct {
	pluginv1.UnimplementedPluginServer
}

func (hostile) Describe(context.Context, *pluginv1.DescribeRequest) (*pluginv1.DescribeResponse, error) {
	return &pluginv1.DescribeResponse{
		Name: "test", ProtocolVersion: wire.Version, TraceContext: true,
		Tools: []*pluginv1.ToolSpec{
			{Name: "spans", Description: "Answers with hostile spans.", Parameters: []byte(`{"type":"object"}`)},
			{Name: "empty-spans", Description: "Answers with millions of empty spans.", Parameters: []byte(`{"type":"object"}`)},
		},
	}, nil
}

func (hostile) CallTool(_ context.Context, req *pluginv1.CallToolRequest) (*pluginv1.CallToolResponse, error) {
	if req.GetName() == "empty-spans" {
		return &pluginv1.CallToolResponse{Text: "empty", Trace: emptySpans}, nil
	}
	tr, err := proto.Marshal(&pluginv1.Trace{Spans: hostileSpans(), DroppedSpans: 7})
	if err != nil {
		return nil, err
	}
	return &pluginv1.CallToolResponse{Text: "hostile", Trace: tr}, nil
}

func id(n int) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

func hostileSpans() []*pluginv1.Span {
	big := strings.Repeat("é", 1000) // 2000 bytes, two a character
	now := time.Now()
	var spans []*pluginv1.Span
	// Two that point at each other, one under a parent that is not, and
	// two whose IDs are no IDs: one too short, one taken.
	spans = append(spans,
		&pluginv1.Span{SpanId: id(1), ParentSpanId: id(2), Name: "loop-a"},
		&pluginv1.Span{SpanId: id(2), ParentSpanId: id(1), Name: "loop-b"},
		&pluginv1.Span{SpanId: id(3), ParentSpanId: id(999_999), Name: "orphan",
			StartUnixNano: now.Add(-time.Hour).UnixNano(), EndUnixNano: now.Add(time.Hour).UnixNano()},
		&pluginv1.Span{SpanId: []byte{1, 2, 3}, Name: "bad-id"},
		&pluginv1.Span{SpanId: id(3), Name: "duplicate"},
	)
	attrs := make([]*pluginv1.Attribute, 200)
	for i := range attrs {
		attrs[i] = &pluginv1.Attribute{Key: big, Value: &pluginv1.Attribute_StringValue{StringValue: big}}
	}
	small := make([]*pluginv1.Attribute, 20)
	for i := range small {
		small[i] = &pluginv1.Attribute{Key: "k", Value: &pluginv1.Attribute_IntValue{IntValue: int64(i)}}
	}
	events := make([]*pluginv1.SpanEvent, 100)
	for i := range events {
		events[i] = &pluginv1.SpanEvent{Name: big, TimeUnixNano: 1, Attributes: small}
	}
	// A chain of a thousand, the first with far too much on it, all
	// starting after the call and ending before it.
	for i := range 1000 {
		s := &pluginv1.Span{SpanId: id(10 + i), ParentSpanId: id(9 + i), Name: big, Kind: 99,
			StartUnixNano: now.Add(time.Hour).UnixNano(), EndUnixNano: 1}
		if i == 0 {
			s.Attributes, s.Events = attrs, events
		}
		spans = append(spans, s)
	}
	return spans
}

// emptySpans is an encoded Trace of empty spans, two bytes each, as many
// as an answer holds.
var emptySpans = func() []byte {
	b := make([]byte, 0, wire.MaxMessageSize-1024)
	for len(b) < cap(b) {
		b = protowire.AppendVarint(protowire.AppendTag(b, 1, protowire.BytesType), 0)
	}
	return b
}()
