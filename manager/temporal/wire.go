package temporal

import (
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
)

// The names the workflow, its query and its activities are registered
// under: a client and its workers must agree on them, so they are part of
// the backend's contract, like its inputs below.
const (
	// WorkflowName is the agent workflow: one run of one agent.
	WorkflowName = "troupe.agent"
	// QueryEvents asks an agent workflow for its events from an index on.
	QueryEvents = "troupe.events"

	activityStart    = "troupe.start"
	activityGenerate = "troupe.generate"
	activityAnswer   = "troupe.answer"
	activityTools    = "troupe.tools"
	activityTree     = "troupe.tree"
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
	Ceiling agenttypes.Budget
	Limits  limits
	// Checkout names the project checkout the run needs; a worker
	// serving another refuses it.
	Checkout string
}

// limits are the manager's limits on a tree, carried down it.
type limits struct {
	MaxChildren int
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
}

// stepInput is an activity's input: the agent, and what its step takes.
type stepInput struct {
	Agent    manager.StepAgent
	Checkout string
	Messages []message                    `json:",omitempty"`
	Reply    *generateOut                 `json:",omitempty"`
	Call     *toolCall                    `json:",omitempty"`
	Response *agenttypes.DelegateResponse `json:",omitempty"`
	Refusal  string                       `json:",omitempty"`
}

// treeOutput is the tree activity's result.
type treeOutput struct {
	Text   string
	Events []manager.Event
}

// eventsPage is an answer to QueryEvents.
type eventsPage struct {
	// Events are the agent's events from the index asked for; Next is
	// the index to ask for next.
	Events []manager.Event
	Next   int
	// Dropped counts events no longer kept, that the asker missed.
	Dropped int
	// Ended says the agent's last event is among those given so far.
	Ended bool
}

// Messages and answers cross to and from the activities in forms of
// their own: langchaingo's JSON form of a tool call does not read back
// what it wrote.

// message is an llms.MessageContent.
type message struct {
	Role  llms.ChatMessageType
	Parts []part
}

// part is one part of a message: text, a tool call or a tool's result.
type part struct {
	Text   string    `json:",omitempty"`
	Call   *toolCall `json:",omitempty"`
	Result *toolCall `json:",omitempty"`
}

// toolCall is a tool call (ID, Name, Args) or its result (ID, Name,
// Content in Args).
type toolCall struct {
	ID   string
	Type string `json:",omitempty"`
	Name string
	Args string
}

// choice is the part of an llms.ContentChoice a step reads.
type choice struct {
	Content    string
	StopReason string     `json:",omitempty"`
	Calls      []toolCall `json:",omitempty"`
}

func toMessages(ms []llms.MessageContent) []message {
	out := make([]message, len(ms))
	for i, m := range ms {
		out[i].Role = m.Role
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.TextContent:
				out[i].Parts = append(out[i].Parts, part{Text: p.Text})
			case llms.ToolCall:
				c := fromCall(p)
				out[i].Parts = append(out[i].Parts, part{Call: &c})
			case llms.ToolCallResponse:
				out[i].Parts = append(out[i].Parts, part{Result: &toolCall{ID: p.ToolCallID, Name: p.Name, Args: p.Content}})
			}
		}
	}
	return out
}

func fromMessages(ms []message) []llms.MessageContent {
	out := make([]llms.MessageContent, len(ms))
	for i, m := range ms {
		out[i].Role = m.Role
		for _, p := range m.Parts {
			switch {
			case p.Call != nil:
				out[i].Parts = append(out[i].Parts, p.Call.llm())
			case p.Result != nil:
				out[i].Parts = append(out[i].Parts, llms.ToolCallResponse{ToolCallID: p.Result.ID, Name: p.Result.Name, Content: p.Result.Args})
			default:
				out[i].Parts = append(out[i].Parts, llms.TextContent{Text: p.Text})
			}
		}
	}
	return out
}

func fromCall(c llms.ToolCall) toolCall {
	t := toolCall{ID: c.ID, Type: c.Type}
	if c.FunctionCall != nil {
		t.Name, t.Args = c.FunctionCall.Name, c.FunctionCall.Arguments
	}
	return t
}

func (c toolCall) llm() llms.ToolCall {
	return llms.ToolCall{ID: c.ID, Type: c.Type, FunctionCall: &llms.FunctionCall{Name: c.Name, Arguments: c.Args}}
}

func toChoice(c *llms.ContentChoice) *choice {
	if c == nil {
		return nil
	}
	out := &choice{Content: c.Content, StopReason: c.StopReason}
	for _, tc := range c.ToolCalls {
		out.Calls = append(out.Calls, fromCall(tc))
	}
	return out
}

func (c *choice) llm() *llms.ContentChoice {
	if c == nil {
		return nil
	}
	out := &llms.ContentChoice{Content: c.Content, StopReason: c.StopReason}
	for _, tc := range c.Calls {
		out.ToolCalls = append(out.ToolCalls, tc.llm())
	}
	return out
}

// startOut is the start step's result (manager.StepStart).
type startOut struct {
	Messages   []message
	Model      string
	TypeBudget agenttypes.Budget
	Events     []manager.Event
	End        *manager.StepEnd
}

// generateOut is a model call's result (manager.ModelStep).
type generateOut struct {
	Choice *choice
	Usage  agenttypes.Usage
	Turn   int
	Past   bool
	Over   int
	Events []manager.Event
	End    *manager.StepEnd
}

func (g *generateOut) step() manager.ModelStep {
	return manager.ModelStep{Choice: g.Choice.llm(), Usage: g.Usage, Turn: g.Turn, Past: g.Past, Over: g.Over}
}

// answerOut is an answer step's result (manager.AnswerStep).
type answerOut struct {
	Retry  []message
	Events []manager.Event
	End    *manager.StepEnd
}

// toolsOut is a turn's tool calls' result (manager.ToolStep).
type toolsOut struct {
	Messages []message
	Counted  int
	Tree     []manager.TreeCall
	Notes    []string
	Events   []manager.Event
	End      *manager.StepEnd
}
