//go:build unix

package wire

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// spanContext is a sampled span context with a trace state, as a caller's
// span has.
func spanContext(t *testing.T) trace.SpanContext {
	t.Helper()
	state, err := trace.ParseTraceState("vendor=abc,other=1")
	require.NoError(t, err)
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		SpanID:     trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8},
		TraceFlags: trace.FlagsSampled,
		TraceState: state,
	})
}

// seenTrace is a plugin end that answers with what it saw of the call's
// trace context.
func seenTrace(seen chan<- trace.SpanContext) func(context.Context, *pluginv1.CallToolRequest) *pluginv1.CallToolResponse {
	return func(ctx context.Context, req *pluginv1.CallToolRequest) *pluginv1.CallToolResponse {
		seen <- trace.SpanContextFromContext(ctx)
		return echo(ctx, req)
	}
}

// A call's trace context crosses the lane once the lane is told the
// plugin takes it: the plugin's side gets the caller's span context,
// state and all, as its remote parent, and the request itself whole.
func TestALaneCarriesACallsTraceContext(t *testing.T) {
	seen := make(chan trace.SpanContext, 1)
	lane, _ := servedLane(t, seenTrace(seen))
	lane.CarryTrace()
	sc := spanContext(t)
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	resp, err := lane.CallTool(ctx, &pluginv1.CallToolRequest{Name: "n", Args: []byte("a")})
	require.NoError(t, err)
	assert.Equal(t, "n:a", resp.GetText())
	got := <-seen
	assert.True(t, got.IsRemote())
	assert.Equal(t, sc.TraceID(), got.TraceID())
	assert.Equal(t, sc.SpanID(), got.SpanID())
	assert.True(t, got.IsSampled())
	assert.Equal(t, "vendor=abc,other=1", got.TraceState().String())
}

// Until the lane is told the plugin takes it, and for a call whose
// context has no span, or one not sampled (under which a plugin records
// nothing), no trace context crosses.
func TestALaneCarriesNoTraceContextUnlessThereIsOneToCarry(t *testing.T) {
	seen := make(chan trace.SpanContext, 1)
	lane, _ := servedLane(t, seenTrace(seen))
	traced := trace.ContextWithSpanContext(context.Background(), spanContext(t))
	_, err := lane.CallTool(traced, &pluginv1.CallToolRequest{Name: "n"})
	require.NoError(t, err)
	assert.False(t, (<-seen).IsValid(), "a lane not told carries none")

	lane.CarryTrace()
	_, err = lane.CallTool(context.Background(), &pluginv1.CallToolRequest{Name: "n"})
	require.NoError(t, err)
	assert.False(t, (<-seen).IsValid(), "a call without a span carries none")

	unsampled := trace.ContextWithSpanContext(context.Background(), spanContext(t).WithTraceFlags(0))
	_, err = lane.CallTool(unsampled, &pluginv1.CallToolRequest{Name: "n"})
	require.NoError(t, err)
	assert.False(t, (<-seen).IsValid(), "a call under a span not sampled carries none")
	assert.Equal(t, unsampled, OutgoingTrace(unsampled), "nor does it over gRPC")
}

// Carrying trace context costs a call without a span nothing: the same
// allocations as on a lane that carries none, and no metadata.
func TestTraceContextCostsACallWithoutASpanNothing(t *testing.T) {
	lane, _ := servedLane(t, echo)
	ctx := context.Background()
	req := &pluginv1.CallToolRequest{Name: "n", Args: []byte("a")}
	call := func() {
		if _, err := lane.CallTool(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	plain := testing.AllocsPerRun(200, call)
	lane.CarryTrace()
	assert.Equal(t, plain, testing.AllocsPerRun(200, call))

	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = OutgoingTrace(ctx) }))
	assert.Equal(t, ctx, OutgoingTrace(ctx), "no metadata without a span")
	assert.Equal(t, ctx, IncomingTrace(ctx))
}

// Over gRPC, the trace context goes as W3C traceparent and tracestate in
// the call's metadata, and comes out of it as the plugin's remote parent.
func TestTraceContextCrossesInGRPCMetadata(t *testing.T) {
	sc := spanContext(t)
	out := OutgoingTrace(trace.ContextWithSpanContext(context.Background(), sc))
	md, ok := metadata.FromOutgoingContext(out)
	require.True(t, ok)
	assert.Equal(t, []string{"00-0102030405060708090a0b0c0d0e0f10-0102030405060708-01"}, md.Get(TraceParentKey))
	assert.Equal(t, []string{"vendor=abc,other=1"}, md.Get(TraceStateKey))

	in := IncomingTrace(metadata.NewIncomingContext(context.Background(), md))
	got := trace.SpanContextFromContext(in)
	assert.True(t, got.IsRemote())
	assert.Equal(t, sc.TraceID(), got.TraceID())
	assert.Equal(t, sc.SpanID(), got.SpanID())
	assert.Equal(t, sc.TraceState().String(), got.TraceState().String())

	bad := metadata.NewIncomingContext(context.Background(), metadata.Pairs(TraceParentKey, "00-nonsense"))
	assert.False(t, trace.SpanContextFromContext(IncomingTrace(bad)).IsValid(), "a malformed traceparent is no parent")
}

// traceHost answers Generate with whether its context has a span context.
type traceHost struct {
	pluginv1.UnimplementedHostServer
}

func (traceHost) Generate(ctx context.Context, _ *pluginv1.GenerateRequest) (*pluginv1.GenerateResponse, error) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		return &pluginv1.GenerateResponse{Text: "traced"}, nil
	}
	return &pluginv1.GenerateResponse{Text: "untraced"}, nil
}

// The host does not take a trace context a plugin sends with its calls
// to the host: a plugin must not put the host's own spans into a trace
// of its choosing. A malformed one fails the call, and nothing else.
func TestTheHostTakesNoTraceContextFromAPlugin(t *testing.T) {
	lane, end, err := NewLane()
	require.NoError(t, err)
	plugin, err := peerOf(end)
	require.NoError(t, err)
	lane.ServeHost(traceHost{})
	t.Cleanup(func() {
		_ = plugin.close()
		_ = lane.Close()
	})
	plugin.sendTrace.Store(true)
	ctx := trace.ContextWithSpanContext(context.Background(), spanContext(t))
	resp, err := laneHost{plugin}.Generate(ctx, &pluginv1.GenerateRequest{})
	require.NoError(t, err)
	assert.Equal(t, "untraced", resp.GetText())

	c, err := plugin.get(ctx)
	require.NoError(t, err)
	defer plugin.discard(c)
	// A traced method whose trace context claims more bytes than follow.
	_, err = c.c.Write([]byte{0, 0, 0, 3, laneGenerate | laneTraced, 0, 9})
	require.NoError(t, err)
	payload, err := readFrame(c.r, &c.rbuf)
	require.NoError(t, err)
	assert.Equal(t, codes.InvalidArgument, codes.Code(payload[0]))
	assert.Contains(t, string(payload[1:]), "trace context is malformed")

	_, err = laneHost{plugin}.Generate(ctx, &pluginv1.GenerateRequest{})
	assert.NoError(t, err, "the lane serves on")
	assert.Equal(t, codes.OK, status.Code(err))
}

// A trace state longer than a lane carries is left out, and the call
// made with its trace context all the same.
func TestALongTraceStateIsLeftOutNotTheCall(t *testing.T) {
	seen := make(chan trace.SpanContext, 1)
	lane, _ := servedLane(t, seenTrace(seen))
	lane.CarryTrace()
	var members []string
	for i := range 8 {
		members = append(members, fmt.Sprintf("k%d=%s", i, strings.Repeat("v", 200)))
	}
	state, err := trace.ParseTraceState(strings.Join(members, ","))
	require.NoError(t, err)
	require.Greater(t, len(state.String()), maxLaneTrace)
	sc := spanContext(t).WithTraceState(state)
	_, err = lane.CallTool(trace.ContextWithSpanContext(context.Background(), sc), &pluginv1.CallToolRequest{Name: "n"})
	require.NoError(t, err)
	got := <-seen
	assert.Equal(t, sc.SpanID(), got.SpanID())
	assert.Empty(t, got.TraceState().String())
}

// A request as large as a lane carries untraced is carried traced too:
// the trace context, which would take its frame past the limit, is left
// out, not the call.
func TestARequestAtTheLimitIsCarriedTracedOrNot(t *testing.T) {
	seen := make(chan trace.SpanContext, 1)
	lane, _ := servedLane(t, func(ctx context.Context, req *pluginv1.CallToolRequest) *pluginv1.CallToolResponse {
		seen <- trace.SpanContextFromContext(ctx)
		return &pluginv1.CallToolResponse{Text: strconv.Itoa(len(req.GetArgs()))}
	})
	lane.CarryTrace()
	req := &pluginv1.CallToolRequest{Name: "n"}
	for req.Args = make([]byte, MaxMessageSize-16); proto.Size(req) < MaxMessageSize-1; {
		req.Args = append(req.Args, 'a')
	}
	require.Equal(t, MaxMessageSize-1, proto.Size(req))
	traced := trace.ContextWithSpanContext(context.Background(), spanContext(t))
	for _, ctx := range []context.Context{context.Background(), traced} {
		resp, err := lane.CallTool(ctx, req)
		require.NoError(t, err)
		assert.Equal(t, strconv.Itoa(len(req.Args)), resp.GetText())
		assert.False(t, (<-seen).IsValid(), "no room for the trace context")
	}
	_, err := lane.CallTool(traced, &pluginv1.CallToolRequest{Name: "n"})
	require.NoError(t, err)
	assert.True(t, (<-seen).IsValid(), "a small request carries it still")

	req.Args = append(req.Args, 'a')
	_, err = lane.CallTool(traced, req)
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "one byte more is too large")
}
