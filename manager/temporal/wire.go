package temporal

import (
	"time"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
)

// The names the workflow, its query and its activities are registered
// under: a client and its workers must agree on them, so they are part of
// the backend's contract, like its inputs below.
const (
	// WorkflowName is the agent workflow: one run of one agent.
	WorkflowName = "troupe.agent"
)

// DefaultTaskQueue is the task queue of a Config or WorkerConfig that
// names none.
const DefaultTaskQueue = "troupe"

// agentInput is an agent workflow's input.
type agentInput struct {
	// Agent is the agent; its Dir is relative to the workers' checkout.
	Agent manager.StepAgent
	// Child is set for a delegated child: its budget is its request's,
	// filled from its type's, within Ceiling, what its parent lets it
	// have.
	Child   bool
	Group   string // the delegate call it was spawned by, for its events
	Ceiling agenttypes.Budget
	Limits  limits
	// Checkout names the project checkout the run needs; a worker
	// serving another refuses it.
	Checkout string
	// Carried is the run so far, for a workflow run that goes on from
	// the one before it (ContinueAsNew); nil for the first.
	Carried *carried `json:",omitempty"`
	// ResumeFrom is the ID of the ended agent whose conversation this one
	// continues with its task.
	ResumeFrom string `json:",omitempty"`
}

// limits are the manager's limits on a tree, carried down it.
type limits struct {
	MaxChildren         int
	MaxBackgroundGroups int
	// QuestionTimeout bounds how long ask_parent waits for an answer.
	QuestionTimeout time.Duration
	// HistoryEvents is the history length past which a run goes on in a
	// new workflow run; 0: defaultHistoryEvents.
	HistoryEvents int
	// TreeAgents is how many agents of the agent's subtree, itself
	// included, may be alive at once: its share of MaxTreeAgents. 0: no
	// bound.
	TreeAgents int
	// Heartbeat is how long a worker may go silent in a long model or
	// tool call before the call is given to another worker.
	Heartbeat time.Duration
}

// agentOutput is how an agent workflow ended.
type agentOutput struct {
	End      manager.StepEnd
	Model    string
	Usage    agenttypes.Usage // the agent's and its subtree's
	OwnUsage agenttypes.Usage
	// ToolCalls and Turns are its own; SubtreeToolCalls its subtree's.
	ToolCalls, SubtreeToolCalls int
	Turns                       int
	// Duration is how long it ran, by the workflow's clock.
	Duration time.Duration
	// Changes are what it changed in its workspace, recorded on its
	// branch; nil for a type that changes no files.
	Changes *agenttypes.Changes `json:",omitempty"`
}
