package modelcap

import (
	"context"
	"fmt"
)

// Unlimited is a count of CallInfo that no budget limits.
const Unlimited = -1

// CallInfo is what the manager tells a model of one call beyond
// langchaingo's call options: the task of the agent making it, as its
// caller gave it, and what the agent's budgets leave. It travels on the
// call's context rather than in the options because a provider may send
// every option it does not know to its API (OpenAI's sends
// CallOptions.Metadata as the request's metadata); nothing here is sent
// anywhere. A model may plan with it, as the offline retrieval model
// fits its searches to it; one that ignores it loses nothing. The tokens
// left arrive as they always do, as llms.WithMaxTokens.
type CallInfo struct {
	// Task is the agent's task as its caller gave it, before a type's
	// Prompt hook or the context it inherits from its parent were added
	// to it, when the call is a turn of the manager's own loop, whose
	// last human message is that task so dressed; "" for other calls (a
	// type's own loop, a parent answering its child on the child's
	// behalf), whose model finds its task in the messages.
	Task string
	// Turns is how many model calls the agent may still make, this one
	// included, or Unlimited.
	Turns int
	// ToolCalls is how many tool calls the agent may still make: the
	// least that its own tool-call budget and its ancestors' leave, or
	// Unlimited.
	ToolCalls int
}

type callKey struct{}

// callCtx carries a call's CallInfo in one allocation, where
// context.WithValue would take a second to box it: a context is made at
// every model call.
type callCtx struct {
	context.Context
	info CallInfo
}

func (c *callCtx) String() string { return fmt.Sprint(c.Context) + ".WithCall" }

func (c *callCtx) Value(key any) any {
	if _, ok := key.(callKey); ok {
		return &c.info
	}
	return c.Context.Value(key)
}

// WithCall returns a context that carries c to the model called with it.
func WithCall(ctx context.Context, c CallInfo) context.Context {
	if ctx == nil {
		panic("modelcap.WithCall: nil parent context") // as context.WithValue
	}
	return &callCtx{Context: ctx, info: c}
}

// CallFrom returns the CallInfo on ctx; ok is false when there is none
// (a model called outside a manager), and then nothing is known to be
// limited.
func CallFrom(ctx context.Context) (c CallInfo, ok bool) {
	p, ok := ctx.Value(callKey{}).(*CallInfo)
	if !ok {
		return CallInfo{Turns: Unlimited, ToolCalls: Unlimited}, false
	}
	return *p, true
}
