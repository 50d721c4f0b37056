package sdktest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/sdk"
)

// options bend agentLoop into the broken loops below.
type options struct {
	// onModelError handles a failed Generate; nil returns it wrapped.
	onModelError func(ctx context.Context, err error) (*sdk.RunResponse, error)
	// extraTool is called first, whatever Session.Tools lists.
	extraTool string
	// offer replaces the tool names offered to the model.
	offer []string
	// ignoreResp reads the model's answer even when Generate failed.
	ignoreResp bool
	// skipModel answers without asking the model.
	skipModel bool
	// exclusive makes the loop refuse a second run at once.
	exclusive *sync.Mutex
}

// agentLoop is a well-behaved loop unless opts bend it: it offers the
// model the Session's tools, runs the calls the model asks for, and ends
// with the model's first answer without tool calls.
func agentLoop(opts options) sdk.Loop {
	return sdk.LoopFunc(func(ctx context.Context, s sdk.Session, req sdk.RunRequest) (*sdk.RunResponse, error) {
		if opts.exclusive != nil {
			if !opts.exclusive.TryLock() {
				return nil, errors.New("busy")
			}
			defer opts.exclusive.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
		if opts.skipModel {
			return &sdk.RunResponse{Output: "done"}, nil
		}
		specs, err := s.Tools(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing tools: %w", err)
		}
		names := []string{}
		for _, spec := range specs {
			names = append(names, spec.Name)
		}
		if opts.offer != nil {
			names = opts.offer
		}
		if opts.extraTool != "" {
			if _, err := s.CallTool(ctx, sdk.ToolCall{ID: "x", Name: opts.extraTool, Args: json.RawMessage(`{}`)}); err != nil && !errors.Is(err, sdk.ErrToolRefused) {
				return nil, err
			}
		}
		msgs := []sdk.Message{{Role: sdk.RoleUser, Text: req.Task}}
		for range 10 {
			resp, err := s.Generate(ctx, sdk.GenerateRequest{Messages: msgs, Tools: names})
			if err != nil && !opts.ignoreResp {
				if opts.onModelError != nil {
					return opts.onModelError(ctx, err)
				}
				return nil, fmt.Errorf("model call: %w", err)
			}
			if len(resp.ToolCalls) == 0 {
				return &sdk.RunResponse{Output: resp.Text}, nil
			}
			msgs = append(msgs, sdk.Message{Role: sdk.RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls})
			for _, tc := range resp.ToolCalls {
				out, err := s.CallTool(ctx, tc)
				switch {
				case errors.Is(err, sdk.ErrBudgetExceeded) || ctx.Err() != nil:
					return nil, fmt.Errorf("tool %s: %w", tc.Name, err)
				case err != nil:
					msgs = append(msgs, sdk.Message{Role: sdk.RoleTool, ToolCallID: tc.ID, Name: tc.Name, Text: "error: " + err.Error()})
				default:
					msgs = append(msgs, sdk.Message{Role: sdk.RoleTool, ToolCallID: tc.ID, Name: tc.Name, Text: out.Text})
				}
			}
		}
		return nil, errors.New("too many turns")
	})
}

func upperScript() Script {
	return Script{
		Task:  "shout abc",
		Tools: []sdk.Tool{upper()},
		Replies: []sdk.GenerateResponse{
			{ToolCalls: []sdk.ToolCall{{ID: "1", Name: "upper", Args: json.RawMessage(`{"text":"abc"}`)}}},
			{ToolCalls: []sdk.ToolCall{{ID: "2", Name: "upper", Args: json.RawMessage(`{"text":"def"}`)}}},
			{Text: "ABC DEF"},
		},
		Want: []string{"ABC DEF"},
	}
}

func TestCheckLoopPassesAWellBehavedLoop(t *testing.T) {
	require.NoError(t, CheckLoop(agentLoop(options{}), upperScript()))
	require.NoError(t, CheckLoop(agentLoop(options{})), "with no script")
}

func TestCheckLoopCatchesBrokenLoops(t *testing.T) {
	var slow sync.WaitGroup
	t.Cleanup(slow.Wait) // the loops that ignore ctx end before goleak looks
	tests := []struct {
		name   string
		loop   sdk.Loop
		script Script
		want   []string
	}{
		{"nil loop", nil, upperScript(), []string{"the loop is nil"}},
		{"panics when the model fails", agentLoop(options{ignoreResp: true}), upperScript(), []string{
			"model call 1 refused for the budget: Run panicked",
			"model call 3 failing: Run panicked",
			"cancelled during model call 2: Run panicked",
		}},
		{"swallows the budget error", agentLoop(options{onModelError: func(context.Context, error) (*sdk.RunResponse, error) {
			return &sdk.RunResponse{Output: "partial"}, nil
		}}), upperScript(), []string{
			"model call 2 refused for the budget: Run succeeded; it must end with the Session's error",
			"model call 1 failing: Run succeeded",
		}},
		{"does not wrap the budget error", agentLoop(options{onModelError: func(_ context.Context, err error) (*sdk.RunResponse, error) {
			return nil, fmt.Errorf("model call: %v", err)
		}}), upperScript(), []string{"model call 1 refused for the budget: Run's error \"model call: sdktest: the token budget is used up\" does not wrap"}},
		{"feeds a tool budget refusal to the model", sdk.LoopFunc(func(ctx context.Context, s sdk.Session, req sdk.RunRequest) (*sdk.RunResponse, error) {
			// Calls one tool, ignores its error, and answers.
			_, _ = s.CallTool(ctx, sdk.ToolCall{Name: "upper", Args: json.RawMessage(`{"text":"a"}`)})
			resp, err := s.Generate(ctx, sdk.GenerateRequest{})
			if err != nil {
				return nil, err
			}
			return &sdk.RunResponse{Output: resp.Text}, nil
		}), Script{Tools: []sdk.Tool{upper()}}, []string{"tool call 1 refused for the budget: Run succeeded"}},
		{"retries past cancellation", agentLoop(options{onModelError: func(ctx context.Context, err error) (*sdk.RunResponse, error) {
			if errors.Is(err, sdk.ErrBudgetExceeded) {
				return nil, err
			}
			slow.Add(1)
			defer slow.Done()
			time.Sleep(3 * cancelGrace) // a retry that ignores ctx
			return nil, err
		}}), upperScript(), []string{
			"cancelled during model call 2: Run did not return within 300ms of its context being cancelled",
		}},
		{"calls a tool the Session does not list", agentLoop(options{extraTool: "grep"}), upperScript(),
			[]string{`the scripted run: called tool "grep", which Session.Tools does not list`}},
		{"calls its tools when none are offered", agentLoop(options{extraTool: "upper"}), upperScript(),
			[]string{`with no tools offered: called tool "upper", which Session.Tools does not list`}},
		{"offers the model a tool the Session does not list", agentLoop(options{offer: []string{"upper", "grep"}}), upperScript(),
			[]string{`the scripted run: asked the model to offer tool "grep"`}},
		{"never asks the model", agentLoop(options{skipModel: true}), upperScript(),
			[]string{"the loop never called Session.Generate", `want "ABC DEF" in the output "done"`}},
		{"one run at a time", agentLoop(options{exclusive: &sync.Mutex{}}), upperScript(),
			[]string{"run several times at once: want no error, got busy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckLoop(tt.loop, tt.script)
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.True(t, strings.HasPrefix(err.Error(), "sdktest: loop"), err.Error())
		})
	}
}

func TestTestLoopReportsToT(t *testing.T) {
	tb := &fakeTB{}
	TestLoop(tb, agentLoop(options{extraTool: "grep"}), upperScript())
	require.NotEmpty(t, tb.errors)
	assert.Contains(t, tb.errors[0], `the scripted run: called tool "grep"`)

	tb = &fakeTB{}
	TestLoop(tb, agentLoop(options{}), upperScript())
	assert.Empty(t, tb.errors)
}

func TestSessionDropsToolCallsNotOffered(t *testing.T) {
	s := NewSession(Script{
		Tools: []sdk.Tool{upper()},
		Replies: []sdk.GenerateResponse{
			{Text: "a", ToolCalls: []sdk.ToolCall{{Name: "upper"}, {Name: "grep"}}},
			{Text: "b", ToolCalls: []sdk.ToolCall{{Name: "upper"}}},
		},
	})
	ctx := context.Background()
	resp, err := s.Generate(ctx, sdk.GenerateRequest{})
	require.NoError(t, err)
	assert.Equal(t, []sdk.ToolCall{{Name: "upper"}}, resp.ToolCalls, "nil Tools offers all the Session's tools, and only those")
	resp, err = s.Generate(ctx, sdk.GenerateRequest{Tools: []string{}})
	require.NoError(t, err)
	assert.Equal(t, "b", resp.Text)
	assert.Empty(t, resp.ToolCalls, "an empty Tools offers none")
	resp, err = s.Generate(ctx, sdk.GenerateRequest{})
	require.NoError(t, err)
	assert.Equal(t, EndOfScript, resp.Text)
	assert.Len(t, s.Requests(), 3)
	assert.Empty(t, s.Violations())
}

func TestSessionRefusesToolsItDoesNotList(t *testing.T) {
	s := NewSession(Script{Tools: []sdk.Tool{upper()}, Agent: sdk.Agent{ID: "a1"}})
	ctx := context.Background()
	out, err := s.CallTool(ctx, sdk.ToolCall{Name: "upper", Args: json.RawMessage(`{"text":"x"}`)})
	require.NoError(t, err)
	assert.Equal(t, "X", out.Text)
	_, err = s.CallTool(ctx, sdk.ToolCall{Name: "grep"})
	require.ErrorIs(t, err, sdk.ErrToolRefused)
	assert.Len(t, s.Calls(), 2)
	assert.Equal(t, []string{`called tool "grep", which Session.Tools does not list`}, s.Violations())
}

func TestSessionRecordsAndRefusesCallsAfterClose(t *testing.T) {
	s := NewSession(Script{Answer: sdk.Answer{Text: "yes", By: "parent"}})
	ctx := context.Background()
	require.NoError(t, s.Note(ctx, "n"))
	require.NoError(t, s.Event(ctx, "e"))
	a, err := s.AskParent(ctx, sdk.Question{Text: "q?"})
	require.NoError(t, err)
	assert.Equal(t, "yes", a.Text)
	assert.Equal(t, []string{"n"}, s.Notes())
	assert.Equal(t, []string{"e"}, s.Events())
	assert.Equal(t, []sdk.Question{{Text: "q?"}}, s.Questions())

	s.Close()
	require.Error(t, s.Event(ctx, "late"))
	assert.Equal(t, []string{"called Session.Event after Run returned"}, s.Violations())
	assert.Equal(t, []string{"e"}, s.Events())
}

func TestSessionHonoursContext(t *testing.T) {
	s := NewSession(Script{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Generate(ctx, sdk.GenerateRequest{})
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.Tools(ctx)
	require.ErrorIs(t, err, context.Canceled)
}
