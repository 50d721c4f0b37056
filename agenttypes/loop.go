package agenttypes

import (
	"context"
	"encoding/json"

	"github.com/troupe-dev/troupe/sdk/fault"
)

// Loop runs an agent in place of the manager's own model ↔ tool loop: a
// type with a Loop decides itself what to ask the model and which tools to
// call, through the Session the manager hands it. Everything it does
// through the Session is counted and budgeted exactly like the manager's
// own loop, so a Loop never holds an API key and cannot overspend. Plugins
// use it for agent types that bring their own loop.
type Loop interface {
	// Run works on the task and returns the final answer. An error fails
	// the agent; the manager reads ErrPluginExited and ErrBudgetExceeded
	// in it (with errors.Is) for the run's reason.
	Run(ctx context.Context, s Session, task string) (string, error)
}

// LoopFunc adapts a function to Loop.
type LoopFunc func(ctx context.Context, s Session, task string) (string, error)

// Run calls f.
func (f LoopFunc) Run(ctx context.Context, s Session, task string) (string, error) {
	return f(ctx, s, task)
}

// Session is what the manager offers a custom Loop for one agent.
type Session interface {
	// Generate makes one model call with the agent's model. The manager
	// caps its output to the tokens the budget leaves and refuses it, with
	// an error wrapping ErrBudgetExceeded, when a budget is used up.
	Generate(ctx context.Context, req GenerateRequest) (*GenerateResponse, error)
	// CallTool runs one of the agent's tools. A tool the agent may not use
	// is refused with an error wrapping ErrToolRefused (not counted); a
	// tool's own error is returned as an error, its text as the result.
	CallTool(ctx context.Context, call ToolCall) (string, error)
	// Tools describes the tools the agent may call.
	Tools() []ToolSpec
	// Note appends to the agent's scratchpad, returned if the run is cut
	// short.
	Note(text string)
	// Tree is the agent's tree: delegate, collect, ask the parent.
	Tree() Tree
}

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one message of a conversation a Loop holds.
type Message struct {
	Role string `json:"role"`
	Text string `json:"text,omitempty"`
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID and Name say which call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	Name       string `json:"name,omitempty"`
}

// ToolCall is a model's request to call a tool.
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// GenerateRequest is one model call of a Loop.
type GenerateRequest struct {
	Messages []Message
	// Tools names the agent's tools to offer the model; nil offers them
	// all, an empty non-nil slice none.
	Tools []string
	// MaxTokens caps the answer; 0 leaves the cap to the budget.
	MaxTokens int
}

// GenerateResponse is the model's answer.
type GenerateResponse struct {
	Text      string     `json:"text"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	Usage     Usage      `json:"usage"`
}

// Errors a Loop meets or returns.
var (
	// ErrToolRefused is wrapped by a Session's refusal of a tool the agent
	// may not use. It is fault.ErrToolRefused, the sentinel of code
	// tool_refused on both sides of the plugin boundary.
	ErrToolRefused = fault.ErrToolRefused
	// ErrBudgetExceeded is wrapped by a Session's refusal when a budget is
	// used up; a Loop that returns it ends its run with the budget's
	// reason. It is fault.ErrBudgetExceeded, the sentinel of code
	// budget_exceeded on both sides of the plugin boundary.
	ErrBudgetExceeded = fault.ErrBudgetExceeded
	// ErrPluginExited is wrapped by the errors of a plugin whose process
	// exited while it served an agent. Its code is unavailable.
	ErrPluginExited = fault.Sentinel(fault.Unavailable, "plugin exited")
)
