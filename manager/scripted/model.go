package scripted

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// Step is one answer of the script.
type Step struct {
	// Text is the assistant's text.
	Text string
	// Calls are the tool calls the assistant asks for.
	Calls []Call
	// Err, when set, is returned instead of an answer.
	Err error
	// InputTokens and OutputTokens are reported as the provider's counts
	// when either is non-zero; otherwise the model reports none and the
	// caller estimates.
	InputTokens, OutputTokens int
	// Delay is waited before answering, honouring the context.
	Delay time.Duration
	// CostUSD is reported as the call's price when non-zero.
	CostUSD float64
	// Block waits until the context ends and returns its error.
	Block bool
	// Panic, when set, makes the call panic with this value.
	Panic any
	// Func, when set, computes the step from the conversation.
	Func func(ctx context.Context, msgs []llms.MessageContent) Step
}

// Call is a tool call in a Step.
type Call struct {
	Name string
	// Args is the JSON arguments; "{}" when empty.
	Args string
}

// Request is one recorded call to the model.
type Request struct {
	Messages  []llms.MessageContent
	Tools     []string
	MaxTokens int
}

// Model is an llms.Model that plays back a script. It is safe for
// concurrent use.
type Model struct {
	steps  []Step
	record bool

	mu    sync.Mutex
	calls []Request
}

var _ llms.Model = (*Model)(nil)

// New returns a model that answers with steps in order. A conversation
// that runs past the end of the script gets an error.
func New(steps ...Step) *Model { return &Model{steps: steps, record: true} }

// WithoutRecording stops the model keeping its requests, for benchmarks.
func (m *Model) WithoutRecording() *Model { m.record = false; return m }

// Requests returns the calls made so far, in the order they arrived.
func (m *Model) Requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.calls...)
}

// GenerateContent answers with the next step of the conversation's script.
func (m *Model) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	opts := callOptionsPool.Get().(*llms.CallOptions)
	defer func() {
		*opts = llms.CallOptions{}
		callOptionsPool.Put(opts)
	}()
	for _, o := range options {
		o(opts)
	}
	if m.record {
		m.keep(msgs, opts)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	turn := 0
	for i := range msgs {
		if msgs[i].Role == llms.ChatMessageTypeAI {
			turn++
		}
	}
	if turn >= len(m.steps) {
		return nil, fmt.Errorf("scripted model: the script has %d steps and the conversation asks for step %d", len(m.steps), turn+1)
	}
	step := m.steps[turn]
	if step.Func != nil {
		step = step.Func(ctx, msgs)
	}
	if err := step.wait(ctx); err != nil {
		return nil, err
	}
	if step.Text != "" && opts.StreamingFunc != nil {
		// Streamed word by word, as a provider would in chunks.
		for _, word := range strings.SplitAfter(step.Text, " ") {
			if err := opts.StreamingFunc(ctx, []byte(word)); err != nil {
				return nil, err
			}
		}
	}
	return step.response(turn), nil
}

// callOptionsPool holds the options of calls: applying an option takes
// their address, which would otherwise put a fresh copy on the heap at
// every call of a model whose cost benchmarks count as the manager's.
var callOptionsPool = sync.Pool{New: func() any { return new(llms.CallOptions) }}

// keep records a request.
func (m *Model) keep(msgs []llms.MessageContent, opts *llms.CallOptions) {
	req := Request{Messages: append([]llms.MessageContent(nil), msgs...), MaxTokens: opts.MaxTokens}
	for _, t := range opts.Tools {
		if t.Function != nil {
			req.Tools = append(req.Tools, t.Function.Name)
		}
	}
	m.mu.Lock()
	m.calls = append(m.calls, req)
	m.mu.Unlock()
}

// wait plays the step's panic, block, delay or error.
func (s Step) wait(ctx context.Context) error {
	if s.Panic != nil {
		panic(s.Panic)
	}
	if s.Block {
		<-ctx.Done()
		return ctx.Err()
	}
	if s.Delay > 0 {
		t := time.NewTimer(s.Delay)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return s.Err
}

// response is the step's answer at turn: its text, tool calls and
// counts, in as few allocations as the response's shape allows.
func (s Step) response(turn int) *llms.ContentResponse {
	r := &struct {
		resp    llms.ContentResponse
		choices [1]*llms.ContentChoice
		choice  llms.ContentChoice
	}{}
	r.choices[0] = &r.choice
	r.resp.Choices = r.choices[:]
	choice := &r.choice
	choice.Content, choice.StopReason = s.Text, "stop"
	if len(s.Calls) > 0 {
		choice.StopReason = "tool_calls"
		choice.ToolCalls = make([]llms.ToolCall, len(s.Calls))
		fns := make([]llms.FunctionCall, len(s.Calls))
		for i, c := range s.Calls {
			args := c.Args
			if args == "" {
				args = "{}"
			}
			fns[i] = llms.FunctionCall{Name: c.Name, Arguments: args}
			choice.ToolCalls[i] = llms.ToolCall{ID: callID(turn, i), Type: "function", FunctionCall: &fns[i]}
		}
	}
	if s.InputTokens != 0 || s.OutputTokens != 0 {
		choice.GenerationInfo = map[string]any{"PromptTokens": s.InputTokens, "CompletionTokens": s.OutputTokens}
	}
	if s.CostUSD != 0 {
		if choice.GenerationInfo == nil {
			choice.GenerationInfo = map[string]any{}
		}
		choice.GenerationInfo["CostUSD"] = s.CostUSD
	}
	return &r.resp
}

// callIDs are the IDs of the first calls of the first turns, made once.
var callIDs = func() (ids [16][8]string) {
	for turn := range ids {
		for i := range ids[turn] {
			ids[turn][i] = fmt.Sprintf("call_%d_%d", turn, i)
		}
	}
	return ids
}()

// callID is the ID of call i of the answer at turn: call_TURN_I.
func callID(turn, i int) string {
	if turn < len(callIDs) && i < len(callIDs[turn]) {
		return callIDs[turn][i]
	}
	return fmt.Sprintf("call_%d_%d", turn, i)
}

// Call answers a single prompt with the first step's text.
func (m *Model) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// ToolResults returns the tool results in msgs, in order: what the manager
// sent back to the model.
func ToolResults(msgs []llms.MessageContent) []llms.ToolCallResponse {
	var out []llms.ToolCallResponse
	for _, m := range msgs {
		for _, p := range m.Parts {
			if r, ok := p.(llms.ToolCallResponse); ok {
				out = append(out, r)
			}
		}
	}
	return out
}

// JSON marshals v for a Call's Args, panicking on failure (test helper).
func JSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Text returns the text parts of a message joined.
func Text(m llms.MessageContent) string {
	var b strings.Builder
	for _, p := range m.Parts {
		if t, ok := p.(llms.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}
