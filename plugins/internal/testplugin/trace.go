package main

import (
	"context"
	"errors"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/troupe-dev/troupe/sdk"
)

// traceTools make spans, as a plugin author would, with the tracer
// sdk/serve installs.
func traceTools() []sdk.Tool {
	return []sdk.Tool{
		tool("traced", "Makes a span \"step\" with a child \"inner\" that fails, and says the trace and span IDs of the context it got, or \"none\".", traced),
		tool("flood", "Makes far more spans, far larger, than a call may return.", flood),
	}
}

func traced(ctx context.Context, _ args, _ sdk.CallRequest) (string, error) {
	seen := "none"
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		seen = sc.TraceID().String() + " " + sc.SpanID().String()
	}
	tracer := otel.Tracer("testplugin")
	ctx, step := tracer.Start(ctx, "step", trace.WithAttributes(attribute.Int("step.n", 1), attribute.String("step.what", "look")))
	_, inner := tracer.Start(ctx, "inner", trace.WithSpanKind(trace.SpanKindClient))
	inner.AddEvent("found", trace.WithAttributes(attribute.Bool("found.it", true)))
	inner.RecordError(errors.New("inner failed"))
	inner.SetStatus(codes.Error, "inner failed")
	inner.End()
	step.End()
	return seen, nil
}

func flood(ctx context.Context, _ args, _ sdk.CallRequest) (string, error) {
	tracer := otel.Tracer("testplugin")
	big := strings.Repeat("x", 10_000)
	for i := range 1000 {
		_, span := tracer.Start(ctx, big)
		for j := range 100 {
			span.SetAttributes(attribute.String(big[:200+j], big))
			span.AddEvent(big, trace.WithAttributes(attribute.String("k", big), attribute.Int("i", i)))
		}
		span.End()
	}
	return "flooded", nil
}
