package sdktest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/troupe-dev/troupe/sdk"
)

// EndOfScript is what the fake model answers once a Script's replies are
// used up.
const EndOfScript = "sdktest: end of script"

// Script is one run of a Loop against a fake Session: the task, the tools
// the Session offers, and what the model answers.
type Script struct {
	// Name names the script in reports; "" names it by its Task.
	Name string
	// Task, Type and Agent make the RunRequest the loop gets.
	Task  string
	Type  string
	Agent sdk.Agent
	// Tools are the tools the Session offers: Tools returns their specs
	// and CallTool runs them in the test's process, as Agent. A call of
	// any other tool is refused with an *sdk.Error of CodeToolRefused, and
	// CheckLoop reports it.
	Tools []sdk.Tool
	// Replies are the model's answers to the loop's Generate calls, in
	// order. A tool call in a reply to a tool the request did not offer is
	// dropped, as a model calls only what it is offered. Once they are used
	// up, the model answers EndOfScript with no tool calls.
	Replies []sdk.GenerateResponse
	// Answer is what AskParent answers.
	Answer sdk.Answer
	// Want are substrings the loop's final output must hold.
	Want []string
}

func (s Script) name() string {
	if s.Name != "" {
		return s.Name
	}
	return "script " + abbrev(s.Task)
}

func (s Script) request() sdk.RunRequest {
	return sdk.RunRequest{Task: s.Task, Type: s.Type, Agent: s.Agent}
}

// Session is a fake sdk.Session: its model answers from a Script and its
// tools run in the test's process. It records what the loop asked of it.
// It is safe for concurrent use.
type Session struct {
	script Script
	specs  []sdk.ToolSpec
	tools  map[string]sdk.Tool

	// Faults the suite injects; nil for NewSession's.
	generateFault func(ctx context.Context, n int) error
	toolFault     func(ctx context.Context, n int) error
	toolsFault    error

	mu         sync.Mutex
	requests   []sdk.GenerateRequest
	calls      []sdk.ToolCall
	notes      []string
	events     []string
	questions  []sdk.Question
	violations []string
	closed     bool
}

var _ sdk.Session = (*Session)(nil)

// NewSession returns a fake Session that plays script.
func NewSession(script Script) *Session {
	s := &Session{script: script, tools: map[string]sdk.Tool{}}
	for _, t := range script.Tools {
		spec := t.Spec()
		s.specs = append(s.specs, spec)
		s.tools[spec.Name] = t
	}
	return s
}

func (s *Session) violate(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.violations = append(s.violations, fmt.Sprintf(format, args...))
}

// begin checks that the run is still going and ctx is live.
func (s *Session) begin(ctx context.Context, method string) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		s.violate("called Session.%s after Run returned", method)
		return sdk.Errorf(sdk.CodeUnavailable, "sdktest: the run has ended")
	}
	return ctx.Err()
}

// Generate answers with the script's next reply.
func (s *Session) Generate(ctx context.Context, req sdk.GenerateRequest) (*sdk.GenerateResponse, error) {
	if err := s.begin(ctx, "Generate"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	n := len(s.requests)
	s.requests = append(s.requests, cloneRequest(req))
	s.mu.Unlock()
	if s.generateFault != nil {
		if err := s.generateFault(ctx, n); err != nil {
			return nil, err
		}
	}
	offered := map[string]bool{}
	for _, spec := range s.specs {
		offered[spec.Name] = req.Tools == nil
	}
	for _, name := range req.Tools {
		if _, ok := s.tools[name]; !ok {
			s.violate("asked the model to offer tool %q, which Session.Tools does not list", name)
			continue
		}
		offered[name] = true
	}
	if n >= len(s.script.Replies) {
		return &sdk.GenerateResponse{Text: EndOfScript, Usage: sdk.Usage{InputTokens: 10, OutputTokens: 5}}, nil
	}
	reply := s.script.Replies[n]
	resp := &sdk.GenerateResponse{Text: reply.Text, Usage: reply.Usage}
	for _, tc := range reply.ToolCalls {
		if offered[tc.Name] {
			resp.ToolCalls = append(resp.ToolCalls, tc)
		}
	}
	return resp, nil
}

func cloneRequest(req sdk.GenerateRequest) sdk.GenerateRequest {
	req.Messages = slices.Clone(req.Messages)
	req.Tools = slices.Clone(req.Tools)
	return req
}

// CallTool runs one of the script's tools; any other is refused.
func (s *Session) CallTool(ctx context.Context, call sdk.ToolCall) (*sdk.CallResponse, error) {
	if err := s.begin(ctx, "CallTool"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	n := len(s.calls)
	s.calls = append(s.calls, call)
	s.mu.Unlock()
	tool, ok := s.tools[call.Name]
	if !ok {
		s.violate("called tool %q, which Session.Tools does not list", call.Name)
		return nil, sdk.Errorf(sdk.CodeToolRefused, "tool %q is not one of the agent's tools", call.Name)
	}
	if s.toolFault != nil {
		if err := s.toolFault(ctx, n); err != nil {
			return nil, err
		}
	}
	return tool.Call(ctx, sdk.CallRequest{Args: call.Args, Agent: s.script.Agent})
}

// Tools returns the specs of the script's tools.
func (s *Session) Tools(ctx context.Context) ([]sdk.ToolSpec, error) {
	if err := s.begin(ctx, "Tools"); err != nil {
		return nil, err
	}
	if s.toolsFault != nil {
		return nil, s.toolsFault
	}
	return slices.Clone(s.specs), nil
}

// Note records text.
func (s *Session) Note(ctx context.Context, text string) error {
	if err := s.begin(ctx, "Note"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notes = append(s.notes, text)
	return nil
}

// AskParent records q and returns the script's Answer.
func (s *Session) AskParent(ctx context.Context, q sdk.Question) (*sdk.Answer, error) {
	if err := s.begin(ctx, "AskParent"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.questions = append(s.questions, q)
	a := s.script.Answer
	return &a, nil
}

// Event records text.
func (s *Session) Event(ctx context.Context, text string) error {
	if err := s.begin(ctx, "Event"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, text)
	return nil
}

// Requests returns the loop's Generate requests, in order.
func (s *Session) Requests() []sdk.GenerateRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Calls returns the loop's tool calls, in order, refused ones included.
func (s *Session) Calls() []sdk.ToolCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// Notes returns what the loop noted.
func (s *Session) Notes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.notes)
}

// Events returns the loop's events.
func (s *Session) Events() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

// Questions returns what the loop asked its parent.
func (s *Session) Questions() []sdk.Question {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.questions)
}

// Violations returns the broken rules the Session saw: a tool called or
// offered that it does not list, a call after the run ended.
func (s *Session) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.violations)
}

// Close marks the run as ended: every later call is a violation.
func (s *Session) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
}
