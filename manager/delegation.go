package manager

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/models/modelcap"
)

// agentTree is the agenttypes.Tree the manager hands the tools of one
// agent: the delegate, collect and ask_parent tools act through it.
type agentTree struct{ a *Agent }

var _ agenttypes.Tree = agentTree{}

// maxLabel is the longest label a task may have.
const maxLabel = 32

// Delegate spawns the tasks as one group of children of the calling agent.
func (t agentTree) Delegate(ctx context.Context, req agenttypes.DelegateRequest) (*agenttypes.DelegateResponse, error) {
	a, m := t.a, t.a.m
	switch n := len(req.Tasks); {
	case n == 0 || n > agenttypes.MaxDelegateTasks:
		return nil, fmt.Errorf("%w: %d tasks; give 1 to %d", ErrDelegation, n, agenttypes.MaxDelegateTasks)
	case a.depth >= m.cfg.MaxDepth:
		return nil, fmt.Errorf("%w: agent %s is at depth %d, the deepest delegation goes (MaxDepth %d); do the work itself", ErrDelegation, a.id, a.depth, m.cfg.MaxDepth)
	}
	tasks := make([]agenttypes.ChildTask, len(req.Tasks))
	for i, task := range req.Tasks {
		if task.Label == "" {
			task.Label = fmt.Sprintf("task %d", i+1)
		}
		if utf8.RuneCountInString(task.Label) > maxLabel {
			return nil, fmt.Errorf("%w: task %d's label is longer than %d characters", ErrDelegation, i+1, maxLabel)
		}
		tasks[i] = task
	}
	if approve := m.cfg.ApproveDelegation; approve != nil {
		ap := Approval{Parent: a.Info(), Summary: approvalSummary(tasks), Tasks: tasks, Background: req.Background}
		var err error
		m.guard("ApproveDelegation for agent ", a.id, func() { err = approve(ctx, ap) })
		if err != nil {
			return nil, fmt.Errorf("%w: not approved: %w", ErrDelegation, err)
		}
	}
	g, err := m.SpawnGroup(ctx, GroupRequest{ParentID: a.id, Tasks: tasks, Concurrency: req.Concurrency, Background: req.Background})
	if err != nil {
		return nil, err
	}
	resp := &agenttypes.DelegateResponse{Group: g.id, Children: g.Children()}
	if req.Background {
		return resp, nil
	}
	results, err := g.Wait(ctx)
	if err != nil {
		g.Cancel() // the parent is stopping: so are its children
		return nil, err
	}
	resp.Results = make([]agenttypes.ChildResult, len(results))
	for i, r := range results {
		resp.Results[i] = ChildResultOf(g.agents[i].label, r)
	}
	return resp, nil
}

// approvalSummary is a delegate request in one line: "Spawn 3 subagents:
// [security] scan for vulnerab…; [correctness] check return val…".
func approvalSummary(tasks []agenttypes.ChildTask) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Spawn %d subagent", len(tasks))
	if len(tasks) != 1 {
		b.WriteByte('s')
	}
	b.WriteString(":")
	for i, t := range tasks {
		if i > 0 {
			b.WriteByte(';')
		}
		fmt.Fprintf(&b, " [%s] %s", t.Label, shorten(strings.Join(strings.Fields(t.Prompt), " "), 24))
	}
	return b.String()
}

// shorten cuts s to n characters with an ellipsis.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// group returns the group of a's with the given ID.
func (a *Agent) groupByID(id string) (*Group, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, g := range a.groups {
		if g.id == id {
			return g, nil
		}
	}
	return nil, fmt.Errorf("%w %q: agent %s started no such group", agenttypes.ErrUnknownGroup, id, a.id)
}

// Collect reports a group of the calling agent, waiting up to req.Wait
// for it to finish.
func (t agentTree) Collect(ctx context.Context, req agenttypes.CollectRequest) (*agenttypes.CollectResponse, error) {
	g, err := t.a.groupByID(req.Group)
	if err != nil {
		return nil, err
	}
	if req.Wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, req.Wait)
		_, _ = g.Wait(wctx) // lends the caller's slot while it waits
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return g.Collect(), nil
}

// CancelGroup cancels a group of the calling agent.
func (t agentTree) CancelGroup(_ context.Context, id string) error {
	g, err := t.a.groupByID(id)
	if err != nil {
		return err
	}
	g.Cancel()
	return nil
}

// escalate is the parent model's reply when only the user can answer.
const escalate = "ESCALATE"

// AskParent asks the calling agent's parent: the parent's question
// handlers, then the parent's model, then (if the model passes it on) the
// user. A question nobody answers in Config.QuestionTimeout gets an empty
// Answer, which the child can work with.
func (t agentTree) AskParent(ctx context.Context, q agenttypes.Question) (agenttypes.Answer, error) {
	a := t.a
	p := a.parent
	if p == nil {
		return agenttypes.Answer{}, fmt.Errorf("%w: agent %s was not spawned by another agent, so there is nobody to ask", agenttypes.ErrNoParent, a.id)
	}
	a.emit(&Event{Kind: EventQuestion, Text: q.Text})
	qctx, cancel := context.WithTimeout(ctx, a.m.cfg.QuestionTimeout)
	defer cancel()
	ans, err := a.answer(qctx, q)
	ev := Event{Kind: EventAnswer, Text: ans.Text, Tool: ans.By}
	switch {
	case err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		ev.Error = fmt.Sprintf("no answer within %s", a.m.cfg.QuestionTimeout)
		ans, err = agenttypes.Answer{}, nil
	case err != nil:
		ev.Error = err.Error()
	case ans.Text == "":
		ev.Error = "nobody answered"
	}
	a.emit(&ev)
	return ans, err
}

func (a *Agent) answer(ctx context.Context, q agenttypes.Question) (agenttypes.Answer, error) {
	m, p := a.m, a.parent
	info := QuestionInfo{From: a.Info(), Parent: p.Info(), Question: q}
	for _, h := range []QuestionHandler{p.onQuestion, m.cfg.OnQuestion} {
		if h == nil {
			continue
		}
		var ans agenttypes.Answer
		var err error
		m.guard("question handler for agent ", a.id, func() { ans, err = h(ctx, info) })
		if err != nil {
			return agenttypes.Answer{}, err
		}
		if strings.TrimSpace(ans.Text) != "" {
			ans.By = "handler"
			return ans, nil
		}
	}
	if !modelcap.IsRetrievalOnly(p.model) {
		text, err := p.answerWithModel(ctx, a, q)
		switch {
		case errors.Is(err, ErrBudgetExceeded):
			// The parent cannot afford to answer: the user may.
			text = escalate
		case err != nil:
			return agenttypes.Answer{}, err
		}
		if !strings.EqualFold(strings.Trim(strings.TrimSpace(text), ".*"), escalate) {
			return agenttypes.Answer{Text: text, By: "parent"}, nil
		}
	}
	if ask := m.cfg.AskUser; ask != nil {
		var text string
		var err error
		m.guard("AskUser for agent ", a.id, func() { text, err = ask(ctx, info) })
		if err != nil {
			return agenttypes.Answer{}, err
		}
		if strings.TrimSpace(text) != "" {
			return agenttypes.Answer{Text: text, By: "user"}, nil
		}
	}
	return agenttypes.Answer{}, nil
}

// answerWithModel asks the parent's model one question from its child,
// with the parent's conversation so far; the call is counted to the
// parent.
func (p *Agent) answerWithModel(ctx context.Context, child *Agent, q agenttypes.Question) (string, error) {
	system := "You are an agent that handed work to a subagent, and the subagent asks you a question. " +
		"Answer it from your own task and what you have learned, in a few sentences. " +
		"If only the user could answer it, reply with exactly " + escalate + "."
	var b strings.Builder
	b.WriteString("Your conversation so far:\n\n")
	b.WriteString(p.conversationText(maxInheritedBytes))
	fmt.Fprintf(&b, "\n\nYour subagent [%s] (type %s) asks:\n%s", child.label, child.typ.Name, q.Text)
	if len(q.Suggestions) > 0 {
		b.WriteString("\nIts suggestions: ")
		b.WriteString(strings.Join(q.Suggestions, "; "))
	}
	return p.askOwnModel(ctx, system, b.String(), 1024)
}

// askOwnModel makes one call of p's model outside its loop, on p's
// behalf, through the same step as its loop's calls: held to p's turn
// budget and to what p and its ancestors have left, counted to them, and
// recorded as p's model call.
func (p *Agent) askOwnModel(ctx context.Context, system, prompt string, maxTokens int) (string, error) {
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, system),
		llms.TextParts(llms.ChatMessageTypeHuman, prompt),
	}
	in := countTokens(p.model, system) + countTokens(p.model, prompt) + 2*perMessageTokens
	r, err := p.generate(ctx, modelCall{msgs: msgs, input: in, maxOut: maxTokens})
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(r.choice.Content), nil
}

// contextFor is what a child whose type inherits context is told of its
// parent's conversation: a summary written by the parent's model (one call,
// counted to the parent), or, when the parent's model cannot write one
// (the offline model) or the call fails, a digest of the conversation's
// most recent part.
func (p *Agent) contextFor(ctx context.Context) string {
	digest := p.conversationText(maxInheritedBytes)
	if digest == "" {
		return ""
	}
	if !modelcap.IsRetrievalOnly(p.model) {
		const ask = "Summarise your conversation so far for a subagent you are handing a task to: " +
			"what your task is, what you have found, and what the subagent should know. At most 300 words."
		summary, err := p.askOwnModel(ctx, ask, "Your conversation so far:\n\n"+digest, 600)
		if err == nil && summary != "" {
			return "The agent that gave you this task summarises its work so far:\n\n" + summary
		}
		p.logger().Warn("no summary of the conversation for a child; passing a digest", "err", err)
	}
	return "The agent that gave you this task has had this conversation so far:\n\n" + digest
}
