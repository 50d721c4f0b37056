package sdk

import (
	"context"
	"encoding/json"
	"time"
)

// Plugin is everything a plugin offers.
type Plugin struct {
	// Name is the plugin's name, as in troupe-plugin-NAME.
	Name string
	// Version is the plugin's own version, shown by troupe plugins list.
	Version string
	// Types are the agent types the plugin offers.
	Types []Type
	// Tools are the tools the plugin offers.
	Tools []Tool
}

// Type is an agent type a plugin offers.
type Type struct {
	// Name is how the type is spawned: letters, digits, '.', '_' or '-'.
	Name string
	// Description says what the type is for, in a sentence or two.
	Description string
	// Prompt is the system prompt, a template as in troupe's definition
	// files; a type with a Loop may leave it empty.
	Prompt string
	// Tools names the tools an agent of the type may call: the host's
	// builtin tools, this plugin's, or another plugin's.
	Tools []string
	// Model is "provider:model", an alias, or "" for the default.
	Model string
	// Budget is the type's default budget.
	Budget Budget
	// OutputJSONSchema, when set, asks for a JSON answer matching it.
	OutputJSONSchema json.RawMessage
	// NeedsLanguageModel refuses the offline retrieval model.
	NeedsLanguageModel bool
	// Examples are tasks the type is for.
	Examples []string
	// Workspace is WorkspaceWorktree, WorkspaceNone, or "": a workspace
	// of its own when the type lists a tool that changes files or runs
	// commands (write, edit, run, merge), the directory it is given
	// otherwise. The host refuses WorkspaceNone with such a tool or with
	// setup commands.
	Workspace string
	// Run says what the host's run tool may start for agents of the
	// type. A type that lists run and allows nothing can run nothing.
	Run RunPolicy
	// Setup are commands that prepare a new workspace (fetching
	// dependencies, say); each must be allowed by Run, as any command.
	Setup []string
	// Loop, when set, runs agents of the type in place of the host's own
	// model ↔ tool loop. It calls back into the host for model calls and
	// tools through its Session, and the host counts and budgets them.
	Loop Loop
}

// Workspace modes of a type (Type.Workspace).
const (
	// WorkspaceWorktree gives each agent of the type a workspace of its
	// own: a git worktree on a branch of its own, from its parent's
	// current state.
	WorkspaceWorktree = "worktree"
	// WorkspaceNone works in the directory the agent is given, to read.
	WorkspaceNone = "none"
)

// RunPolicy says which commands the host's run tool may start for a
// type, and how. The host checks it when it loads the plugin, as it
// checks a definition file's run section, and refuses the type, saying
// why, when it is unusable: at most 64 prefixes and 16 setup commands of
// at most 1024 bytes each, no shell operators, a timeout up to 30
// minutes.
type RunPolicy struct {
	// Allow lists command prefixes as words ("go test", "make"): a
	// command runs only when its first words are those of one of them.
	// A shell runs only when the list names it ("sh -c"). Empty allows
	// nothing.
	Allow []string
	// Timeout is each command's time limit, and the most a call may ask
	// for; 0 leaves it to the host (two minutes). It crosses to the host
	// in whole milliseconds, rounded away from zero.
	Timeout time.Duration
	// Network lets commands reach the network. By default they run
	// without it where the platform can take it away.
	Network bool
}

// Budget holds an agent's limits; zero fields are unset.
type Budget struct {
	MaxTokens    int
	MaxTime      time.Duration
	MaxToolCalls int
	MaxTurns     int
	MaxCostUSD   float64
}

// Tool is a tool a plugin offers. One Tool serves every agent, possibly
// several calls at once: it must be safe for concurrent use.
type Tool interface {
	// Spec describes the tool; it must return the same value every time.
	Spec() ToolSpec
	// Call runs the tool. Its text goes back to the model; an error is
	// reported to the model as the tool's result. Call must honour ctx.
	Call(ctx context.Context, req CallRequest) (*CallResponse, error)
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	// Name is how the model calls the tool: lower case, no spaces.
	Name string
	// Description tells the model when to use the tool.
	Description string
	// Parameters is a JSON schema object for the arguments.
	Parameters json.RawMessage
	// ReadOnly is true when the tool changes nothing outside the agent.
	ReadOnly bool
}

// Agent says which agent a call is for.
type Agent struct {
	// ID is the agent's ID.
	ID string
	// Dir is the directory the agent works in; a tool must not reach
	// outside it.
	Dir string
}

// CallRequest is one call of a tool.
type CallRequest struct {
	// Args is the JSON the model sent.
	Args json.RawMessage
	// Agent is the calling agent.
	Agent Agent
}

// CallResponse is a tool's answer.
type CallResponse struct {
	// Text goes back to the model.
	Text string
}

// ToolFunc adapts a spec and a function to Tool.
type ToolFunc struct {
	ToolSpec
	Func func(ctx context.Context, req CallRequest) (*CallResponse, error)
}

var _ Tool = (*ToolFunc)(nil)

// Spec returns the tool's spec.
func (t *ToolFunc) Spec() ToolSpec { return t.ToolSpec }

// Call calls the function.
func (t *ToolFunc) Call(ctx context.Context, req CallRequest) (*CallResponse, error) {
	return t.Func(ctx, req)
}

// Loop runs an agent of a type that brings its own loop.
type Loop interface {
	// Run works on req.Task through s and returns the final answer.
	Run(ctx context.Context, s Session, req RunRequest) (*RunResponse, error)
}

// LoopFunc adapts a function to Loop.
type LoopFunc func(ctx context.Context, s Session, req RunRequest) (*RunResponse, error)

// Run calls f.
func (f LoopFunc) Run(ctx context.Context, s Session, req RunRequest) (*RunResponse, error) {
	return f(ctx, s, req)
}

// RunRequest is the agent a Loop runs.
type RunRequest struct {
	// Task is what the agent is asked to do.
	Task string
	// Type is the agent's type.
	Type string
	// Agent is the agent.
	Agent Agent
}

// RunResponse is a Loop's final answer.
type RunResponse struct {
	// Output is the final answer.
	Output string
}

// Session is the host's side of a running Loop: every model and tool
// call goes through the host, which counts and budgets it.
type Session interface {
	// Generate makes one model call with the agent's model.
	Generate(ctx context.Context, req GenerateRequest) (*GenerateResponse, error)
	// CallTool runs one of the agent's tools.
	CallTool(ctx context.Context, call ToolCall) (*CallResponse, error)
	// Tools describes the tools the agent may call.
	Tools(ctx context.Context) ([]ToolSpec, error)
	// Note appends to the agent's scratchpad.
	Note(ctx context.Context, text string) error
	// AskParent asks the agent's parent and waits for the answer.
	AskParent(ctx context.Context, q Question) (*Answer, error)
	// Event reports progress, shown to the user and kept in the
	// transcript.
	Event(ctx context.Context, text string) error
}

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one message of a conversation.
type Message struct {
	Role string
	Text string
	// ToolCalls are an assistant message's calls.
	ToolCalls []ToolCall
	// ToolCallID and Name say which call a tool message answers.
	ToolCallID string
	Name       string
}

// ToolCall is a model's request to call a tool.
type ToolCall struct {
	ID   string
	Name string
	Args json.RawMessage
}

// GenerateRequest is one model call.
type GenerateRequest struct {
	Messages []Message
	// Tools names the agent's tools to offer; nil offers all of them.
	Tools []string
	// MaxTokens caps the answer; 0 leaves it to the budget.
	MaxTokens int
}

// GenerateResponse is the model's answer.
type GenerateResponse struct {
	Text      string
	ToolCalls []ToolCall
	Usage     Usage
}

// Usage is what a call consumed.
type Usage struct {
	InputTokens  int
	OutputTokens int
	CostUSD      float64
}

// Question is what an agent asks its parent.
type Question struct {
	Text        string
	Suggestions []string
}

// Answer is the reply; Text is empty when nobody answered.
type Answer struct {
	Text string
	By   string
}
