package stepwire

import (
	"context"
	"errors"
	"fmt"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/sdk/fault"
)

// Stepper runs an agent's steps. Its errors are *fault.Error values, whose
// codes say whether trying again may help.
type Stepper interface {
	Start(ctx context.Context, in Input) (StartOut, error)
	Generate(ctx context.Context, in Input) (GenerateOut, error)
	Answer(ctx context.Context, in Input) (AnswerOut, error)
	Tools(ctx context.Context, in Input) (ToolsOut, error)
	Tree(ctx context.Context, in Input) (TreeOut, error)
	// Question answers in.Question for in.Agent, its parent, whose
	// conversation is in.Messages.
	Question(ctx context.Context, in Input) (manager.QuestionAnswer, error)
	// CloseWorkspace records the workspace of in.Agent, which has ended,
	// on its branch (manager.CloseWorkspaceStep).
	CloseWorkspace(ctx context.Context, in Input) (CloseOut, error)
}

// Local runs steps on a manager of this process.
type Local struct {
	Manager *manager.Manager
}

var _ Stepper = Local{}

func (l Local) Start(ctx context.Context, in Input) (StartOut, error) {
	st, err := l.Manager.StartStep(ctx, in.Agent)
	return StartOut{Messages: Messages(st.Messages), Model: st.Model, TypeBudget: st.TypeBudget, Workspace: st.Workspace, Events: st.Events, End: st.End}, Fault(err)
}

func (l Local) Generate(ctx context.Context, in Input) (GenerateOut, error) {
	ms, err := l.Manager.GenerateStep(ctx, in.Agent, LLM(in.Messages))
	return GenerateOut{Choice: ChoiceOf(ms.Choice), Usage: ms.Usage, Turn: ms.Turn, Past: ms.Past, Over: ms.Over, Events: ms.Events, End: ms.End}, Fault(err)
}

func (l Local) Answer(ctx context.Context, in Input) (AnswerOut, error) {
	if in.Reply == nil {
		return AnswerOut{}, fault.Errorf(fault.InvalidArgument, "the answer step needs the model's answer")
	}
	as, err := l.Manager.AnswerStep(ctx, in.Agent, in.Reply.Step())
	return AnswerOut{Retry: Messages(as.Retry), Events: as.Events, End: as.End}, Fault(err)
}

func (l Local) Tools(ctx context.Context, in Input) (ToolsOut, error) {
	if in.Reply == nil {
		return ToolsOut{}, fault.Errorf(fault.InvalidArgument, "the tools step needs the model's tool calls")
	}
	ts, err := l.Manager.ToolsStep(ctx, in.Agent, in.Reply.Choice.LLM())
	return ToolsOut{Messages: Messages(ts.Messages), Counted: ts.Counted, Tree: ts.Tree, Notes: ts.Notes, Events: ts.Events, End: ts.End}, Fault(err)
}

func (l Local) Tree(ctx context.Context, in Input) (TreeOut, error) {
	if in.Call == nil {
		return TreeOut{}, fault.Errorf(fault.InvalidArgument, "the tree step needs the tool call it answers")
	}
	text, next, events, err := l.Manager.TreeStep(ctx, in.Agent, in.Call.LLM(), in.Answers)
	return TreeOut{Text: text, Next: next, Events: events}, Fault(err)
}

// Fault is err as a *fault.Error, its class kept: a run that cannot be
// served as it is asked (an unknown type, a model that cannot be
// resolved, a bad request) is InvalidArgument, so it is not tried again.
// Nil stays nil.
func Fault(err error) error {
	if err == nil {
		return nil
	}
	var fe *fault.Error
	if errors.As(err, &fe) {
		if fe.Message != err.Error() {
			return &fault.Error{Code: fe.Code, Message: err.Error(), Retryable: fe.Retryable}
		}
		return fe
	}
	code := fault.CodeOf(err)
	if code == fault.Unknown && (errors.Is(err, agenttypes.ErrUnknownType) || errors.Is(err, manager.ErrModel) || errors.Is(err, manager.ErrBadRequest)) {
		code = fault.InvalidArgument
	}
	return &fault.Error{Code: code, Message: fmt.Sprint(err), Retryable: code.Retryable()}
}

func (l Local) Question(ctx context.Context, in Input) (manager.QuestionAnswer, error) {
	if in.Question == nil {
		return manager.QuestionAnswer{}, fault.Errorf(fault.InvalidArgument, "the question step needs the question")
	}
	out, err := l.Manager.QuestionStep(ctx, in.Agent, LLM(in.Messages), *in.Question)
	return out, Fault(err)
}

func (l Local) CloseWorkspace(ctx context.Context, in Input) (CloseOut, error) {
	ch, err := l.Manager.CloseWorkspaceStep(ctx, in.Agent)
	if err != nil && ch != nil {
		return CloseOut{Changes: ch, Error: err.Error()}, nil
	}
	return CloseOut{Changes: ch}, Fault(err)
}
