package agenttypes

import (
	"context"
	"errors"
	"time"

	"github.com/troupe-dev/troupe/sdk/fault"
)

// Tree is what the manager offers the tools of a running agent to act on
// the agent tree it belongs to: hand tasks to children, follow background
// groups, and ask its parent. Tools find it in Env.Tree, which is nil for a
// tool called outside a manager. Defining it here lets tools delegate
// without importing the manager.
type Tree interface {
	// Delegate spawns one child of the calling agent per task. Unless
	// req.Background is set it returns when every child has ended, with
	// their results in task order; in the background it returns at once
	// with the group's ID, and results arrive as events, through
	// OnComplete callbacks and through Collect.
	Delegate(ctx context.Context, req DelegateRequest) (*DelegateResponse, error)
	// Collect reports a background group of the calling agent: the
	// results of the children that have ended, in task order, and those
	// still running, waiting up to req.Wait for the group to finish.
	Collect(ctx context.Context, req CollectRequest) (*CollectResponse, error)
	// CancelGroup cancels the children of a background group that are
	// still running.
	CancelGroup(ctx context.Context, group string) error
	// AskParent asks the calling agent's parent a question and waits for
	// the answer or for the question's time limit.
	AskParent(ctx context.Context, q Question) (Answer, error)
	// ChildChanges returns the changes of an ended child of the calling
	// agent, named by its label or ID: nil when it had no workspace or
	// changed nothing.
	ChildChanges(ctx context.Context, child string) (*Changes, error)
}

// Sentinel errors of the agent tree, for errors.Is.
var (
	// ErrDelegation is wrapped by every refusal of a delegate request:
	// the depth, fan-out or group limit, a budget the parent no longer
	// has, a tool the parent may not pass on, the approval hook.
	ErrDelegation = errors.New("delegation refused")
	// ErrNoParent is returned by AskParent for a top-level agent. It is
	// fault.ErrNoParent, the sentinel of code no_parent on both sides of
	// the plugin boundary.
	ErrNoParent = fault.ErrNoParent
	// ErrUnknownGroup is returned for a group the calling agent did not
	// start.
	ErrUnknownGroup = errors.New("unknown group")
)

// Limits of one delegate request.
const (
	MaxDelegateTasks       = 8
	MaxDelegateConcurrency = 4
	// DefaultDelegateConcurrency is how many children of one request run
	// at once when the request does not say.
	DefaultDelegateConcurrency = 2
)

// DelegateRequest hands tasks to children of the calling agent.
type DelegateRequest struct {
	// Tasks are 1 to MaxDelegateTasks tasks.
	Tasks []ChildTask
	// Concurrency is how many of the tasks run at once, 1 to
	// MaxDelegateConcurrency; 0 means DefaultDelegateConcurrency.
	Concurrency int
	// Background returns at once with a group ID instead of waiting.
	Background bool
}

// ChildTask is one task for a child agent.
type ChildTask struct {
	// Label names the task in progress and records (1–32 characters).
	Label string
	// Type is a registered type; "" means explore.
	Type string
	// Prompt is the child's task, with any context files already in it.
	Prompt string
	// Tools narrows the type's tools; it never widens them. Empty keeps
	// them all (less any the parent may not pass on).
	Tools []string
	// Model overrides the type's model.
	Model string
	// MaxOutputTokens caps each of the child's model calls (100–16,384);
	// 0 leaves the cap to the budget.
	MaxOutputTokens int
	// Budget overrides the type's budget field by field; every field is
	// then clamped to what the parent has left.
	Budget Budget
	// Resume is the ID of an ended agent of the same tree whose
	// conversation the child continues with Prompt, instead of starting
	// fresh.
	Resume string
}

// ChildStatus says how a child's run went, as a parent model reads it.
type ChildStatus string

// The statuses of a child.
const (
	ChildOK        ChildStatus = "ok"
	ChildPartial   ChildStatus = "partial"
	ChildFailed    ChildStatus = "failed"
	ChildCancelled ChildStatus = "cancelled"
	// ChildRunning is the status of a child of a background group that has
	// not ended yet.
	ChildRunning ChildStatus = "running"
)

// Usage counts what a run consumed.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	// CostUSD is what the calls cost, when the model reports a price;
	// zero when unknown.
	CostUSD float64 `json:"cost_usd,omitempty"`
	// Estimated is set when some of the tokens are the manager's estimate
	// rather than the provider's count: the provider reported none, or
	// the call was cut off in flight (a provider bills the input it was
	// sent all the same).
	Estimated bool `json:"estimated,omitempty"`
}

// Add returns u plus v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens: u.InputTokens + v.InputTokens, OutputTokens: u.OutputTokens + v.OutputTokens,
		CostUSD: u.CostUSD + v.CostUSD, Estimated: u.Estimated || v.Estimated,
	}
}

// Total is input plus output tokens.
func (u Usage) Total() int { return u.InputTokens + u.OutputTokens }

// ChildResult is how one child's run went.
type ChildResult struct {
	Label  string      `json:"label"`
	ID     string      `json:"id"`
	Type   string      `json:"type"`
	Model  string      `json:"model"`
	Status ChildStatus `json:"status"`
	// Reason is why the run ended (done, budget_tool_calls, cancelled, …);
	// empty while it runs.
	Reason string `json:"reason,omitempty"`
	// Usage covers the child and everything it spawned.
	Usage     Usage         `json:"usage"`
	ToolCalls int           `json:"tool_calls"`
	Turns     int           `json:"turns"`
	Duration  time.Duration `json:"-"`
	// Report is the child's final answer, or for a run cut short its last
	// text and its notes.
	Report string `json:"report"`
	// Error says what went wrong, for a child that did not complete.
	Error string `json:"error,omitempty"`
	// Changes are what the child changed in its workspace, on its branch
	// for the parent to merge; nil when it had no workspace.
	Changes *Changes `json:"changes,omitempty"`
}

// DelegateResponse is what Delegate returns.
type DelegateResponse struct {
	// Group identifies the request's children, for Collect and
	// CancelGroup.
	Group string `json:"group"`
	// Children are the children's labels and IDs, in task order.
	Children []ChildRef `json:"tasks"`
	// Results are the children's results in task order; empty for a
	// background request.
	Results []ChildResult `json:"results,omitempty"`
}

// ChildRef names one child of a group.
type ChildRef struct {
	Label string `json:"label"`
	ID    string `json:"id"`
}

// CollectRequest asks for a background group's results so far.
type CollectRequest struct {
	Group string
	// Wait is how long to wait for the group to finish; 0 answers at once.
	Wait time.Duration
}

// CollectResponse is a background group as it is now.
type CollectResponse struct {
	Group string `json:"group"`
	// Results holds a result for every child in task order: the final
	// one for those that ended, status running for the others.
	Results []ChildResult `json:"results"`
	// Done is true when every child has ended.
	Done bool `json:"done"`
}

// Question is what a child asks its parent.
type Question struct {
	// Text is the question.
	Text string `json:"question"`
	// Suggestions are answers the child thinks likely, optional.
	Suggestions []string `json:"suggestions,omitempty"`
}

// Answer is the reply to a Question.
type Answer struct {
	// Text is the answer; empty when there was none.
	Text string `json:"answer"`
	// By says who answered: "handler", "parent" (the parent's model),
	// "user", or "" when nobody did.
	By string `json:"by,omitempty"`
}
