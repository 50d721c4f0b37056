package agenttypes

import (
	"context"
	"encoding/json"
)

// Tool is anything an agent can call. Implementations must be safe for
// concurrent use: one Tool value serves every agent that is allowed to call
// it, and an agent may call several tools at once.
//
// Per-agent state (the directory the agent works in, its scratchpad) reaches
// the tool through the context; see EnvFrom.
type Tool interface {
	// Spec describes the tool to the model. It must return the same value
	// every time.
	Spec() ToolSpec
	// Call runs the tool with the JSON arguments the model sent. The
	// returned text goes back to the model. An error is reported to the
	// model as the tool's result; it does not end the agent.
	Call(ctx context.Context, args json.RawMessage) (string, error)
}

// ToolSpec is the description of a tool a model sees.
type ToolSpec struct {
	// Name is how the model calls the tool: lower case, no spaces.
	Name string `json:"name"`
	// Description tells the model when to use the tool.
	Description string `json:"description"`
	// Parameters is a JSON schema object for the arguments.
	Parameters json.RawMessage `json:"parameters"`
	// ReadOnly is true when the tool changes nothing outside the agent.
	ReadOnly bool `json:"read_only"`
}

// ToolFunc adapts a function to the Tool interface.
type ToolFunc struct {
	ToolSpec
	Func func(ctx context.Context, args json.RawMessage) (string, error)
}

var _ Tool = (*ToolFunc)(nil)

// Spec returns the tool's description.
func (t *ToolFunc) Spec() ToolSpec { return t.ToolSpec }

// Call runs the function.
func (t *ToolFunc) Call(ctx context.Context, args json.RawMessage) (string, error) {
	return t.Func(ctx, args)
}

// Env is what a tool learns about the agent calling it.
type Env struct {
	// AgentID is the ID of the calling agent.
	AgentID string
	// Dir is the directory the agent works in. File tools must not reach
	// outside it.
	Dir string
	// Note appends text to the agent's scratchpad. It is never nil in an
	// Env the manager builds.
	Note func(text string)
	// Tree lets the tool act on the agent tree: delegate to children,
	// collect background groups, ask the parent. Nil outside a manager.
	Tree Tree
	// Workspace is the agent's own workspace, where the changing tools
	// (write, edit, run, merge) act; nil for an agent that has none, to
	// which they refuse. Dir is its Dir when it is set, and file tools
	// open it from its Top.
	Workspace Workspace
}

type envKey struct{}

// WithEnv returns a context that carries env to the tools called with it.
func WithEnv(ctx context.Context, env *Env) context.Context {
	return context.WithValue(ctx, envKey{}, env)
}

// EnvFrom returns the Env the manager attached to ctx, or an empty Env with
// a no-op Note when there is none (a tool called outside an agent).
func EnvFrom(ctx context.Context) *Env {
	if env, ok := ctx.Value(envKey{}).(*Env); ok && env != nil {
		return env
	}
	return &Env{Note: func(string) {}}
}
