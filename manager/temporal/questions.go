package temporal

import (
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/stepwire"
)

// A child's ask_parent crosses between workflows as signals: the child
// signals its question to its parent's workflow, which has a worker
// answer it on the parent's behalf (the question step: the manager's
// question handler, else the parent's model, else the user) and signals
// the answer back. The parent answers while it waits for its children,
// or works on beside background ones. Signals are written to both
// workflows' histories, so a question survives a worker's crash.

// The signals' names.
const (
	signalQuestion = "troupe.question"
	signalAnswer   = "troupe.answer"
)

// defaultQuestionTimeout is how long a child waits for its answer, as the
// manager's Config.QuestionTimeout's default.
const defaultQuestionTimeout = 2 * time.Minute

// question is a child's question, as its parent's workflow gets it.
type question struct {
	manager.ChildQuestion
	// Seq numbers the child's questions, so that a late answer to an
	// earlier one is not taken for the next one's.
	Seq int
	// Deadline is when the child stops waiting: the parent does not go
	// on answering past it.
	Deadline time.Time
}

// answer is the parent's answer to a question.
type answer struct {
	Seq    int
	Answer agenttypes.Answer
	// Unanswered says why there is no answer.
	Unanswered string `json:",omitempty"`
}

// ask sends the agent's question to its parent's workflow and waits for
// the answer, at most the question timeout.
func (r *agentRun) ask(ctx workflow.Context, q *agenttypes.Question) manager.TreeAnswer {
	if r.sa.ParentID == "" {
		return manager.TreeAnswer{Answer: &agenttypes.Answer{}, Unanswered: "this agent has no parent to ask"}
	}
	r.asked++
	timeout := r.in.Limits.QuestionTimeout
	if timeout <= 0 {
		timeout = defaultQuestionTimeout
	}
	sig := question{Seq: r.asked, Deadline: workflow.Now(ctx).Add(timeout),
		ChildQuestion: manager.ChildQuestion{ChildID: r.sa.ID, Label: r.sa.Label, Type: r.sa.Type, Question: *q}}
	if err := workflow.SignalExternalWorkflow(ctx, r.sa.ParentID, "", signalQuestion, sig).Get(ctx, nil); err != nil {
		return manager.TreeAnswer{Answer: &agenttypes.Answer{}, Unanswered: "the question did not reach the parent: " + err.Error()}
	}
	answers := workflow.GetSignalChannel(ctx, signalAnswer)
	var got answer
	ok, _ := workflow.AwaitWithTimeout(ctx, timeout, func() bool {
		for answers.ReceiveAsync(&got) {
			if got.Seq == r.asked {
				return true
			}
		}
		return false
	})
	if !ok {
		return manager.TreeAnswer{Answer: &agenttypes.Answer{}, Unanswered: fmt.Sprintf("no answer within %s", timeout)}
	}
	return manager.TreeAnswer{Answer: &got.Answer, Unanswered: got.Unanswered}
}

// serveQuestions answers the agent's children's questions, one at a time,
// until ctx ends.
func (r *agentRun) serveQuestions(ctx workflow.Context) {
	questions := workflow.GetSignalChannel(ctx, signalQuestion)
	for {
		var q question
		questions.Receive(ctx, &q) // returns at once, with nothing, once ctx ends
		if ctx.Err() != nil {
			return
		}
		left := q.Deadline.Sub(workflow.Now(ctx))
		if left <= 0 {
			continue // the child no longer waits
		}
		a := answer{Seq: q.Seq}
		var out manager.QuestionAnswer
		// The answer is not worked on past the child's wait.
		qctx, stop := workflow.WithCancel(ctx)
		workflow.Go(qctx, func(c workflow.Context) {
			if workflow.NewTimer(c, left).Get(c, nil) == nil {
				stop()
			}
		})
		err := r.modelStep(qctx, stepwire.StepQuestion, stepwire.Input{Messages: append(slices.Clone(r.msgs), r.turnMsg...), Question: &q.ChildQuestion}, &out)
		stop()
		if err != nil {
			a.Unanswered = "the parent could not answer: " + err.Error()
		} else {
			a.Answer = out.Answer
			r.sa.Spent.Usage = r.sa.Spent.Usage.Add(out.Usage)
			r.own = r.own.Add(out.Usage)
			r.sa.Spent.Turns = max(r.sa.Spent.Turns, out.Turn)
		}
		_ = workflow.SignalExternalWorkflow(ctx, q.ChildID, "", signalAnswer, a).Get(ctx, nil)
	}
}
