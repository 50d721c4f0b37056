package manager

import (
	"encoding/json"
	"time"

	"github.com/troupe-dev/troupe/agenttypes"
)

// Reason says why a run ended.
type Reason string

// The reasons a run ends.
const (
	ReasonDone            Reason = "done"
	ReasonBudgetTokens    Reason = "budget_tokens"
	ReasonBudgetTime      Reason = "budget_time"
	ReasonBudgetToolCalls Reason = "budget_tool_calls"
	ReasonBudgetTurns     Reason = "budget_turns"
	ReasonModelError      Reason = "model_error"
	ReasonToolPanic       Reason = "tool_panic"
	ReasonBadOutput       Reason = "bad_output"
	// ReasonPrompt: the type's prompt template failed to render (too
	// large, or an error such as an index out of range).
	ReasonPrompt Reason = "prompt_error"
	// ReasonPluginExited: the plugin serving the agent exited.
	ReasonPluginExited Reason = "plugin_exited"
	// ReasonLoopError: a type's own loop (Type.Loop) failed.
	ReasonLoopError Reason = "loop_error"
	// ReasonScript: the type's script failed (it panicked, ran past its
	// time, overflowed its stack, ran out of memory) or its Prompt hook
	// refused the task.
	ReasonScript Reason = "script_error"
	// ReasonBudgetCost: the cost budget (max_cost_usd) was used up.
	ReasonBudgetCost Reason = "budget_cost"
	ReasonCancelled  Reason = "cancelled"
	ReasonShutdown   Reason = "shutdown"
)

// Usage counts what a run consumed: tokens, and cost when the model
// reports a price.
type Usage = agenttypes.Usage

// Result is the outcome of one agent run.
type Result struct {
	ID    string `json:"id"`
	Type  string `json:"type"`
	Model string `json:"model"`
	State State  `json:"state"`
	// Reason says why the run ended; ReasonDone for a completed run.
	Reason Reason `json:"reason"`
	// Partial is true when the run was cut short; Output then holds the
	// last assistant text followed by the agent's notes.
	Partial bool `json:"partial"`
	// Output is the final answer.
	Output string `json:"output"`
	// Data is the answer parsed into structured form, when the type has
	// an output parser or asks for JSON.
	Data any `json:"data,omitempty"`
	// Error describes what went wrong; empty for a completed run.
	Error string `json:"error,omitempty"`
	// Err is the error behind Error, for errors.Is: ErrBudgetExceeded,
	// context.Canceled, context.DeadlineExceeded, ErrToolPanic, or the
	// model's own error.
	Err error `json:"-"`
	// Usage covers the agent and everything it spawned; OwnUsage the
	// agent alone.
	Usage    Usage `json:"usage"`
	OwnUsage Usage `json:"own_usage"`
	// TokensOverBudget is how many tokens past a token budget (its own,
	// or an ancestor's that bounds it) a run went when a whole final
	// answer arrived over it. The answer is kept (the tokens are spent),
	// the run completes, and an EventBudgetExceeded says so.
	TokensOverBudget int `json:"tokens_over_budget,omitempty"`
	// Unsettled is set when children were still running when the result
	// was recorded: they ignored their cancellation past the wait for
	// them, and Usage leaves out what they spend from then on. When they
	// have all ended the manager's record (Manager.Wait, Manager.Get) is
	// brought up to date, Unsettled cleared, and an EventSettled on the
	// agent gives the final usage.
	Unsettled bool `json:"unsettled,omitempty"`
	// Changes are what the agent changed in its workspace, recorded on
	// its branch whether it completed, failed or was cancelled; nil for
	// an agent with no workspace.
	Changes    *agenttypes.Changes `json:"changes,omitempty"`
	ToolCalls  int                 `json:"tool_calls"`
	Turns      int                 `json:"turns"`
	Duration   time.Duration       `json:"-"`
	Transcript string              `json:"transcript,omitempty"`
	// TraceID is the OpenTelemetry trace the run's spans are in, in hex;
	// empty without a Config.TracerProvider.
	TraceID string `json:"trace_id,omitempty"`
}

// Success reports whether the run completed.
func (r *Result) Success() bool { return r.State == Completed }

// MarshalJSON adds duration_ms, the form the command line prints.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	return json.Marshal(struct {
		plain
		DurationMS int64 `json:"duration_ms"`
	}{plain(r), r.Duration.Milliseconds()})
}
