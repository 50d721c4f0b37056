package wire

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
)

// The names of the W3C Trace Context headers, which carry a call's trace
// context to a plugin that takes it (DescribeResponse.trace_context): as
// gRPC metadata on a gRPC call, in the frame of a call on a lane.
const (
	TraceParentKey = "traceparent"
	TraceStateKey  = "tracestate"
)

// traceHeaders are a call's W3C Trace Context headers.
type traceHeaders struct {
	parent, state string
}

var _ propagation.TextMapCarrier = (*traceHeaders)(nil)

func (h *traceHeaders) Get(key string) string {
	switch key {
	case TraceParentKey:
		return h.parent
	case TraceStateKey:
		return h.state
	}
	return ""
}

func (h *traceHeaders) Set(key, value string) {
	switch key {
	case TraceParentKey:
		h.parent = value
	case TraceStateKey:
		h.state = value
	}
}

func (h *traceHeaders) Keys() []string { return []string{TraceParentKey, TraceStateKey} }

// traceOf returns the headers of the span context of ctx, and false when
// it has none that is valid and sampled: then nothing is formatted or
// allocated. A plugin records nothing under a span context that is not
// sampled, so none crosses.
func traceOf(ctx context.Context) (traceHeaders, bool) {
	if !Traced(ctx) {
		return traceHeaders{}, false
	}
	var h traceHeaders
	propagation.TraceContext{}.Inject(ctx, &h)
	return h, h.parent != ""
}

// withRemoteTrace returns ctx with the span context h names as its
// remote parent, or ctx itself when h names none that is valid.
func withRemoteTrace(ctx context.Context, h traceHeaders) context.Context {
	return propagation.TraceContext{}.Extract(ctx, &h)
}

// Traced reports whether a call made with ctx carries its trace context
// to a plugin that takes it, and records the spans the plugin sends
// back: ctx's span context is valid and sampled.
func Traced(ctx context.Context) bool {
	sc := trace.SpanContextFromContext(ctx)
	return sc.IsValid() && sc.IsSampled()
}

// OutgoingTrace returns ctx with the trace context of its span in the
// outgoing gRPC metadata, for a plugin that takes it; it returns ctx
// itself, and allocates nothing, when a call with ctx is not Traced.
func OutgoingTrace(ctx context.Context) context.Context {
	h, ok := traceOf(ctx)
	if !ok {
		return ctx
	}
	if h.state == "" {
		return metadata.AppendToOutgoingContext(ctx, TraceParentKey, h.parent)
	}
	return metadata.AppendToOutgoingContext(ctx, TraceParentKey, h.parent, TraceStateKey, h.state)
}

// IncomingTrace returns ctx with the span context the caller sent in the
// incoming gRPC metadata as its remote parent, or ctx itself when the
// caller sent none.
func IncomingTrace(ctx context.Context) context.Context {
	parent := metadata.ValueFromIncomingContext(ctx, TraceParentKey)
	if len(parent) == 0 {
		return ctx
	}
	h := traceHeaders{parent: parent[0]}
	if state := metadata.ValueFromIncomingContext(ctx, TraceStateKey); len(state) > 0 {
		h.state = state[0]
	}
	return withRemoteTrace(ctx, h)
}
