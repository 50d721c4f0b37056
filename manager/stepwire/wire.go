package stepwire

import (
	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
)

// The steps, by the names they are registered and sent under.
const (
	StepStart    = "troupe.start"
	StepGenerate = "troupe.generate"
	StepAnswer   = "troupe.answer"
	StepTools    = "troupe.tools"
	StepTree     = "troupe.tree"
	// StepQuestion answers a child's question on its parent's behalf.
	StepQuestion = "troupe.question"
	// StepCloseWorkspace records an ended agent's workspace on its branch.
	StepCloseWorkspace = "troupe.workspace.close"
)

// Input is a step's input: the agent, and what its step takes.
type Input struct {
	Agent manager.StepAgent
	// Checkout names the project checkout the run needs.
	Checkout string                 `json:",omitempty"`
	Messages []Message              `json:",omitempty"`
	Reply    *GenerateOut           `json:",omitempty"`
	Call     *ToolCall              `json:",omitempty"`
	Answers  []manager.TreeAnswer   `json:",omitempty"`
	Question *manager.ChildQuestion `json:",omitempty"`
}

// Message is an llms.MessageContent.
type Message struct {
	Role  llms.ChatMessageType
	Parts []Part
}

// Part is one part of a message: text, a tool call, or a tool's result.
type Part struct {
	Text   string    `json:",omitempty"`
	Call   *ToolCall `json:",omitempty"`
	Result *ToolCall `json:",omitempty"`
}

// ToolCall is a tool call (ID, Name, Args), or a tool's result (ID, Name,
// and the result's text in Args).
type ToolCall struct {
	ID   string
	Type string `json:",omitempty"`
	Name string
	Args string
}

// Choice is the part of an llms.ContentChoice a step reads.
type Choice struct {
	Content    string
	StopReason string     `json:",omitempty"`
	Calls      []ToolCall `json:",omitempty"`
}

// StartOut is the start step's result (manager.StepStart).
type StartOut struct {
	Messages   []Message
	Model      string
	TypeBudget agenttypes.Budget
	// Workspace is the handle of the agent's workspace, when its type
	// changes files.
	Workspace string `json:",omitempty"`
	Events    []manager.Event
	End       *manager.StepEnd
}

// CloseOut is what closing an agent's workspace recorded, and Error why
// it could not record everything (a git repository made inside it, say):
// not tried again, since trying would fail the same way.
type CloseOut struct {
	Changes *agenttypes.Changes
	Error   string `json:",omitempty"`
}

// GenerateOut is a model call's result (manager.ModelStep).
type GenerateOut struct {
	Choice *Choice
	Usage  agenttypes.Usage
	Turn   int
	Past   bool
	Over   int
	Events []manager.Event
	End    *manager.StepEnd
}

// AnswerOut is an answer step's result (manager.AnswerStep).
type AnswerOut struct {
	Retry  []Message
	Events []manager.Event
	End    *manager.StepEnd
}

// ToolsOut is a turn's tool calls' result (manager.ToolStep).
type ToolsOut struct {
	Messages []Message
	Counted  int
	Tree     []manager.TreeCall
	Notes    []string
	Events   []manager.Event
	End      *manager.StepEnd
}

// TreeOut is a tree call's result text, as the model is given it, or
// the next act on the tree it makes, to be answered first.
type TreeOut struct {
	Text   string
	Next   *manager.TreeCall `json:",omitempty"`
	Events []manager.Event
}

// Messages converts a conversation to its wire form.
func Messages(ms []llms.MessageContent) []Message {
	out := make([]Message, len(ms))
	for i, m := range ms {
		out[i].Role = m.Role
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.TextContent:
				out[i].Parts = append(out[i].Parts, Part{Text: p.Text})
			case llms.ToolCall:
				c := Call(p)
				out[i].Parts = append(out[i].Parts, Part{Call: &c})
			case llms.ToolCallResponse:
				out[i].Parts = append(out[i].Parts, Part{Result: &ToolCall{ID: p.ToolCallID, Name: p.Name, Args: p.Content}})
			}
		}
	}
	return out
}

// LLM converts a conversation back from its wire form.
func LLM(ms []Message) []llms.MessageContent {
	out := make([]llms.MessageContent, len(ms))
	for i, m := range ms {
		out[i].Role = m.Role
		for _, p := range m.Parts {
			switch {
			case p.Call != nil:
				out[i].Parts = append(out[i].Parts, p.Call.LLM())
			case p.Result != nil:
				out[i].Parts = append(out[i].Parts, llms.ToolCallResponse{ToolCallID: p.Result.ID, Name: p.Result.Name, Content: p.Result.Args})
			default:
				out[i].Parts = append(out[i].Parts, llms.TextContent{Text: p.Text})
			}
		}
	}
	return out
}

// Call converts a tool call to its wire form.
func Call(c llms.ToolCall) ToolCall {
	t := ToolCall{ID: c.ID, Type: c.Type}
	if c.FunctionCall != nil {
		t.Name, t.Args = c.FunctionCall.Name, c.FunctionCall.Arguments
	}
	return t
}

// LLM converts a tool call back from its wire form.
func (c ToolCall) LLM() llms.ToolCall {
	return llms.ToolCall{ID: c.ID, Type: c.Type, FunctionCall: &llms.FunctionCall{Name: c.Name, Arguments: c.Args}}
}

// ChoiceOf converts a model's choice to its wire form.
func ChoiceOf(c *llms.ContentChoice) *Choice {
	if c == nil {
		return nil
	}
	out := &Choice{Content: c.Content, StopReason: c.StopReason}
	for _, tc := range c.ToolCalls {
		out.Calls = append(out.Calls, Call(tc))
	}
	return out
}

// LLM converts a choice back from its wire form.
func (c *Choice) LLM() *llms.ContentChoice {
	if c == nil {
		return nil
	}
	out := &llms.ContentChoice{Content: c.Content, StopReason: c.StopReason}
	for _, tc := range c.Calls {
		out.ToolCalls = append(out.ToolCalls, tc.LLM())
	}
	return out
}

// Step is the model call as manager.AnswerStep takes it.
func (g *GenerateOut) Step() manager.ModelStep {
	return manager.ModelStep{Choice: g.Choice.LLM(), Usage: g.Usage, Turn: g.Turn, Past: g.Past, Over: g.Over}
}
