package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/troupe-dev/troupe/plugins/proto/troupe/plugin/v1"
	"github.com/troupe-dev/troupe/sdk"
)

// ErrorToWire turns err into the wire's Error: a context error keeps its
// meaning, an *sdk.Error or a wrapped sdk sentinel its code, anything
// else travels as code unknown with its text. nil stays nil.
func ErrorToWire(err error) *pluginv1.Error {
	if err == nil {
		return nil
	}
	code := sdk.CodeOf(err)
	switch {
	case code != sdk.CodeUnknown:
	case errors.Is(err, context.Canceled):
		code = sdk.CodeCanceled
	case errors.Is(err, context.DeadlineExceeded):
		code = sdk.CodeDeadlineExceeded
	}
	var e *sdk.Error
	retryable := code == sdk.CodeUnavailable
	if errors.As(err, &e) {
		retryable = e.Retryable
	}
	return &pluginv1.Error{Code: string(code), Message: err.Error(), Retryable: retryable}
}

// ErrorFromWire turns the wire's Error into an *sdk.Error; nil stays nil.
func ErrorFromWire(e *pluginv1.Error) *sdk.Error {
	if e == nil {
		return nil
	}
	code := sdk.Code(e.GetCode())
	if code == "" {
		code = sdk.CodeUnknown
	}
	return &sdk.Error{Code: code, Message: e.GetMessage(), Retryable: e.GetRetryable()}
}

// TransportError turns the error of a gRPC call that failed in transit
// into an *sdk.Error: a cancelled or expired call keeps that meaning (and
// ctx's own error is returned when ctx ended), anything else means the
// other side is unavailable.
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
		return &sdk.Error{Code: sdk.CodeInvalidArgument, Message: st.Message()}
	}
	return &sdk.Error{Code: sdk.CodeUnavailable, Message: st.Message(), Retryable: true}
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

// TypeToWire is the wire form of t.
func TypeToWire(t sdk.Type) *pluginv1.Type {
	return &pluginv1.Type{
		Name: t.Name, Description: t.Description, Prompt: t.Prompt, Tools: t.Tools, Model: t.Model,
		Budget: &pluginv1.Budget{
			MaxTokens: int64(t.Budget.MaxTokens), MaxTimeMs: t.Budget.MaxTime.Milliseconds(),
			MaxToolCalls: int64(t.Budget.MaxToolCalls), MaxTurns: int64(t.Budget.MaxTurns), MaxCostUsd: t.Budget.MaxCostUSD,
		},
		OutputJsonSchema: t.OutputJSONSchema, NeedsLanguageModel: t.NeedsLanguageModel, Examples: t.Examples,
		HasLoop: t.Loop != nil,
	}
}

// SpecToWire is the wire form of s.
func SpecToWire(s sdk.ToolSpec) *pluginv1.ToolSpec {
	return &pluginv1.ToolSpec{Name: s.Name, Description: s.Description, Parameters: s.Parameters, ReadOnly: s.ReadOnly}
}

// SpecFromWire is the sdk form of s.
func SpecFromWire(s *pluginv1.ToolSpec) sdk.ToolSpec {
	return sdk.ToolSpec{Name: s.GetName(), Description: s.GetDescription(), Parameters: json.RawMessage(s.GetParameters()), ReadOnly: s.GetReadOnly()}
}

// CallToWire is the wire form of c.
func CallToWire(c sdk.ToolCall) *pluginv1.ToolCall {
	return &pluginv1.ToolCall{Id: c.ID, Name: c.Name, Args: c.Args}
}

// CallFromWire is the sdk form of c.
func CallFromWire(c *pluginv1.ToolCall) sdk.ToolCall {
	return sdk.ToolCall{ID: c.GetId(), Name: c.GetName(), Args: json.RawMessage(c.GetArgs())}
}

// CallsToWire is the wire form of cs.
func CallsToWire(cs []sdk.ToolCall) []*pluginv1.ToolCall {
	out := make([]*pluginv1.ToolCall, len(cs))
	for i, c := range cs {
		out[i] = CallToWire(c)
	}
	return out
}

// CallsFromWire is the sdk form of cs.
func CallsFromWire(cs []*pluginv1.ToolCall) []sdk.ToolCall {
	if len(cs) == 0 {
		return nil
	}
	out := make([]sdk.ToolCall, len(cs))
	for i, c := range cs {
		out[i] = CallFromWire(c)
	}
	return out
}

// MessagesToWire is the wire form of ms.
func MessagesToWire(ms []sdk.Message) []*pluginv1.Message {
	out := make([]*pluginv1.Message, len(ms))
	for i, m := range ms {
		out[i] = &pluginv1.Message{Role: m.Role, Text: m.Text, ToolCalls: CallsToWire(m.ToolCalls), ToolCallId: m.ToolCallID, Name: m.Name}
	}
	return out
}

// MessagesFromWire is the sdk form of ms.
func MessagesFromWire(ms []*pluginv1.Message) []sdk.Message {
	out := make([]sdk.Message, len(ms))
	for i, m := range ms {
		out[i] = sdk.Message{Role: m.GetRole(), Text: m.GetText(), ToolCalls: CallsFromWire(m.GetToolCalls()), ToolCallID: m.GetToolCallId(), Name: m.GetName()}
	}
	return out
}
