package wire

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/troupe-dev/troupe/sdk/fault"
	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// ErrorToWire turns err into the wire's Error: its code (fault.CodeOf:
// a *fault.Error's, a wrapped sentinel's, a context error's; unknown for
// anything else), its text, and whether it is retryable. nil stays nil.
// It and ErrorFromWire are the one crossing of errors, both ways.
func ErrorToWire(err error) *pluginv1.Error {
	if err == nil {
		return nil
	}
	return &pluginv1.Error{Code: string(fault.CodeOf(err)), Message: err.Error(), Retryable: fault.Retryable(err)}
}

// ErrorFromWire turns the wire's Error into a *fault.Error, its message
// prefixed with where it comes from, when from is not empty. nil stays
// nil.
func ErrorFromWire(e *pluginv1.Error, from string) *fault.Error {
	if e == nil {
		return nil
	}
	code := fault.Code(e.GetCode())
	if code == "" {
		code = fault.Unknown
	}
	msg := e.GetMessage()
	if from != "" {
		msg = from + ": " + msg
	}
	return &fault.Error{Code: code, Message: msg, Retryable: e.GetRetryable()}
}

// TransportError turns the error of a gRPC call that failed in transit
// into a failure of the call: ctx's own error when ctx ended; a cancelled
// or expired call keeps that meaning, a message too large is an invalid
// argument, and anything else means the other side is unavailable.
func TransportError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	st, _ := status.FromError(err)
	switch st.Code() {
	case codes.Canceled:
		return context.Canceled
	case codes.DeadlineExceeded:
		return context.DeadlineExceeded
	case codes.ResourceExhausted:
		return &fault.Error{Code: fault.InvalidArgument, Message: st.Message()}
	}
	return &fault.Error{Code: fault.Unavailable, Message: st.Message(), Retryable: true}
}

// Deadline is ctx's deadline in Unix milliseconds, or 0.
func Deadline(ctx context.Context) int64 {
	if d, ok := ctx.Deadline(); ok {
		return d.UnixMilli()
	}
	return 0
}

// WithDeadline bounds ctx by a Unix-millisecond deadline, if there is one.
func WithDeadline(ctx context.Context, ms int64) (context.Context, context.CancelFunc) {
	if ms <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, time.UnixMilli(ms))
}
