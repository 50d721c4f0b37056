package mcpserver

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/troupe-dev/troupe/manager"
)

// multiRoundTrip is the first protocol version in which a server may not
// send a client requests of its own while serving a call: a question goes
// back as the call's result, asking for input, and the client calls again
// with the answer.
const multiRoundTrip = "2026-07-28"

// A call is one run a client started, from its spawn to its end. A client
// whose protocol carries questions in results (multiRoundTrip) makes it in
// several requests, each a round; others make it in one.
type call struct {
	agent *manager.Agent
	// asks takes a question to the round in progress, which hands it to
	// the client; it waits for a round when none is in progress.
	asks chan *question

	mu sync.Mutex
	// The client of the latest round: where questions go, and how.
	session *mcpsdk.ServerSession
	elicits bool // the client takes elicitations
	rounds  bool // questions go back in results (multiRoundTrip)
	// waiting are the questions handed to the client, by ID.
	waiting map[string]*question
}

// A question is one question for the user on its way to the client.
type question struct {
	id     string
	params *mcpsdk.ElicitParams
	answer chan string // takes one answer; "" for none
}

// handler runs agents of typeName for the tool's calls.
func (s *Server) handler(typeName string) mcpsdk.ToolHandler {
	return func(ctx context.Context, req *mcpsdk.CallToolRequest) (res *mcpsdk.CallToolResult, err error) {
		defer func() {
			if p := recover(); p != nil {
				res, err = nil, fmt.Errorf("mcpserver: %s call panicked: %v\n%s", typeName, p, debug.Stack())
			}
		}()
		if req.Params.RequestState != "" {
			return s.resume(ctx, req)
		}
		return s.start(ctx, req, typeName)
	}
}

// start spawns the agent of a new call and waits for it.
func (s *Server) start(ctx context.Context, req *mcpsdk.CallToolRequest, typeName string) (*mcpsdk.CallToolResult, error) {
	in, ask, err := parseInput(req.Params.Arguments, s.cfg.MaxTaskBytes)
	if err != nil {
		return failure(err), nil
	}
	typ, err := s.cfg.Manager.Registry().Type(typeName)
	if err != nil {
		return failure(err), nil
	}
	// Subscribe before spawning, so the agent's first events are seen.
	var sub *manager.Subscription
	if req.Params.GetProgressToken() != nil {
		sub = s.cfg.Manager.Subscribe()
	}
	c := &call{asks: make(chan *question), waiting: map[string]*question{}}
	c.attach(req)
	s.mu.Lock()
	s.spawning++
	s.mu.Unlock()
	agent, err := s.cfg.Manager.Spawn(ctx, manager.SpawnRequest{
		Type: typeName, Task: in.Task, Dir: s.cfg.Dir, Model: in.Model,
		Budget: ask.Merge(typ.Budget).Within(s.cfg.Limit),
	})
	c.agent = agent
	s.track(c)
	if err != nil {
		if sub != nil {
			sub.Close()
		}
		return failure(err), nil
	}
	s.cfg.Logger.Info("mcp call started", "type", typeName, "run", agent.ID())
	return s.round(ctx, req, c, sub)
}

// track records a call whose spawn returned, and forgets it once its
// agent ended; a call whose spawn failed (no agent) is only counted out.
func (s *Server) track(c *call) {
	s.mu.Lock()
	s.spawning--
	close(s.changed)
	s.changed = make(chan struct{})
	if c.agent == nil {
		s.mu.Unlock()
		return
	}
	id := c.agent.ID()
	s.calls[id] = c
	s.runs = append(s.runs, id)
	if over := len(s.runs) - s.cfg.KeepRuns; over > 0 {
		s.runs = append(s.runs[:0:0], s.runs[over:]...)
	}
	s.mu.Unlock()
	go func() {
		<-c.agent.Done()
		s.mu.Lock()
		delete(s.calls, id)
		s.mu.Unlock()
	}()
}

// resume is a later round of a call: the client answers the questions
// of the round before and waits on.
func (s *Server) resume(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
	id, ok := s.verifyState(req.Params.RequestState)
	if !ok {
		return failure(fmt.Errorf("%w: requestState is not one this server gave; call the tool again without it", ErrBadInput)), nil
	}
	s.mu.Lock()
	c := s.calls[id]
	s.mu.Unlock()
	if c == nil { // it ended between the rounds
		res, err := s.cfg.Manager.Wait(ctx, id)
		if err != nil {
			return failure(fmt.Errorf("run %s: %w", id, err)), nil
		}
		return result(res), nil
	}
	for qid, r := range req.Params.InputResponses {
		c.answer(qid, answerOf(r))
	}
	var sub *manager.Subscription
	if req.Params.GetProgressToken() != nil {
		sub = s.cfg.Manager.Subscribe()
	}
	return s.round(ctx, req, c, sub)
}

// round waits for the call's agent to end, or for a question to hand to a
// client that takes them in results, or for the client to cancel. Only a
// cancellation stops the agent.
func (s *Server) round(ctx context.Context, req *mcpsdk.CallToolRequest, c *call, sub *manager.Subscription) (*mcpsdk.CallToolResult, error) {
	c.attach(req)
	if sub != nil {
		stop := s.forwardProgress(ctx, req, c.agent, sub)
		defer stop()
	}
	select {
	case <-c.agent.Done():
		res, err := c.agent.Wait(context.Background())
		if err != nil {
			return nil, err
		}
		return result(res), nil
	case q := <-c.asks:
		c.mu.Lock()
		c.waiting[q.id] = q
		c.mu.Unlock()
		return &mcpsdk.CallToolResult{
			InputRequests: mcpsdk.InputRequestMap{q.id: q.params},
			RequestState:  s.signState(c.agent.ID()),
		}, nil
	case <-ctx.Done():
		s.stop(c.agent)
		return nil, ctx.Err()
	}
}

// stop cancels an agent and its subtree and waits, for a while, for it
// to end, so that its record says it was cancelled.
func (s *Server) stop(a *manager.Agent) {
	a.Cancel()
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.StopGrace)
	defer cancel()
	if _, err := a.Wait(ctx); err != nil {
		s.cfg.Logger.Warn("mcp call cancelled; its agent had not stopped", "run", a.ID(), "after", s.cfg.StopGrace)
	}
}

// attach makes the client of req the one the call's questions go to.
func (c *call) attach(req *mcpsdk.CallToolRequest) {
	caps := req.ClientCapabilities()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.session = req.Session
	c.elicits = caps != nil && caps.Elicitation != nil
	c.rounds = req.ProtocolVersion() >= multiRoundTrip
}

// answer gives the waiting question qid its answer; an unknown ID is
// ignored (it was answered, or timed out, already).
func (c *call) answer(qid, text string) {
	c.mu.Lock()
	q := c.waiting[qid]
	delete(c.waiting, qid)
	c.mu.Unlock()
	if q != nil {
		q.answer <- text // buffered: never blocks
	}
}

// answerOf is the text of a client's answer to an elicitation: what the
// user typed, or "" when they declined or dismissed it.
func answerOf(r mcpsdk.InputResponse) string {
	er, ok := r.(*mcpsdk.ElicitResult)
	if !ok || er.Action != "accept" {
		return ""
	}
	text, _ := er.Content[answerField].(string)
	return strings.TrimSpace(text)
}

// result is the tool result of an ended run: its report as text, and the
// whole result (run ID, state, data, usage) as structured content.
func result(r manager.Result) *mcpsdk.CallToolResult {
	var b strings.Builder
	if r.State != manager.Completed {
		fmt.Fprintf(&b, "The %s agent %s (%s)", r.Type, r.State, r.Reason)
		if r.Error != "" {
			fmt.Fprintf(&b, ": %s", r.Error)
		}
		b.WriteString(".\n\n")
	}
	b.WriteString(strings.TrimRight(r.Output, "\n"))
	fmt.Fprintf(&b, "\n\n[run %s · %d turns · %d tool calls · %d tokens in / %d out]",
		r.ID, r.Turns, r.ToolCalls, r.Usage.InputTokens, r.Usage.OutputTokens)
	return &mcpsdk.CallToolResult{
		Content:           []mcpsdk.Content{&mcpsdk.TextContent{Text: b.String()}},
		StructuredContent: r,
		IsError:           r.State != manager.Completed,
	}
}

// failure is the tool result of a call that could not start a run: the
// client's model reads why and can correct its call.
func failure(err error) *mcpsdk.CallToolResult {
	return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: err.Error()}}, IsError: true}
}
