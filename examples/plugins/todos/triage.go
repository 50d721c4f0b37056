package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/troupe-dev/troupe/sdk"
)

// maxTurns bounds the loop's own model calls; the host's budget may end
// it sooner.
const maxTurns = 8

const triagePrompt = `You triage the TODO, FIXME, HACK and XXX comments of a repository.
You are given the list the todos tool found. Use grep to see how the code around a comment is used, and read to look at a file, when that helps you judge it.
Answer with the comments worth doing first, most important first, each as path:line and one sentence on why. Mention at most ten.`

// triageType returns the todo-triage agent type. It brings its own Loop:
// it lists the comments with the todos tool, then lets the model look
// around with grep and read before it answers.
func triageType() sdk.Type {
	return sdk.Type{
		Name:               "todo-triage",
		Description:        "Finds the TODO, FIXME, HACK and XXX comments of a repository and ranks which to tackle first, with path:line references.",
		Tools:              []string{"todos", "grep", "read"},
		Budget:             sdk.Budget{MaxTurns: maxTurns + 2, MaxToolCalls: 30, MaxTime: 5 * time.Minute},
		NeedsLanguageModel: true,
		Examples:           []string{"which TODOs should we fix before the release?"},
		Loop:               triage{},
	}
}

// triage is the todo-triage loop. Everything it does goes through the
// Session, so the host counts and budgets every model and tool call.
type triage struct{}

func (triage) Run(ctx context.Context, s sdk.Session, req sdk.RunRequest) (*sdk.RunResponse, error) {
	specs, err := s.Tools(ctx)
	if err != nil {
		return nil, fmt.Errorf("todo-triage: listing the agent's tools: %w", err)
	}
	// Call and offer only the tools the agent may use.
	var offer []string
	for _, spec := range specs {
		if slices.Contains([]string{"todos", "grep", "read"}, spec.Name) {
			offer = append(offer, spec.Name)
		}
	}
	slices.Sort(offer)
	if offer == nil {
		offer = []string{} // nil would offer every tool
	}

	found := "(the todos tool is not available to this agent)"
	if slices.Contains(offer, "todos") {
		out, err := call(ctx, s, sdk.ToolCall{ID: "todos-0", Name: "todos", Args: json.RawMessage(`{"max_results":200}`)})
		if err != nil {
			return nil, err
		}
		found = out
		_ = s.Event(ctx, "listed the TODO comments")
	}

	msgs := []sdk.Message{
		{Role: sdk.RoleSystem, Text: triagePrompt},
		{Role: sdk.RoleUser, Text: req.Task + "\n\nThe comments the todos tool found:\n" + found},
	}
	var last string
	for range maxTurns {
		resp, err := s.Generate(ctx, sdk.GenerateRequest{Messages: msgs, Tools: offer})
		if err != nil {
			return nil, fmt.Errorf("todo-triage: model call: %w", err)
		}
		last = resp.Text
		if len(resp.ToolCalls) == 0 {
			return &sdk.RunResponse{Output: resp.Text}, nil
		}
		msgs = append(msgs, sdk.Message{Role: sdk.RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls})
		for _, tc := range resp.ToolCalls {
			text := fmt.Sprintf("tool %q is not available; use one of %s", tc.Name, strings.Join(offer, ", "))
			if slices.Contains(offer, tc.Name) {
				if text, err = call(ctx, s, tc); err != nil {
					return nil, err
				}
			}
			msgs = append(msgs, sdk.Message{Role: sdk.RoleTool, ToolCallID: tc.ID, Name: tc.Name, Text: text})
		}
	}
	return &sdk.RunResponse{Output: last + fmt.Sprintf("\n\n(stopped after %d model calls)", maxTurns)}, nil
}

// call runs one tool through the host. A tool's own error goes back to
// the model as text, for it to correct; a budget used up or the run's end
// ends the loop, with the host's error wrapped so the host sees why.
func call(ctx context.Context, s sdk.Session, tc sdk.ToolCall) (string, error) {
	out, err := s.CallTool(ctx, tc)
	switch {
	case err == nil && out == nil:
		return "", nil
	case err == nil:
		return out.Text, nil
	case ctx.Err() != nil || errors.Is(err, sdk.ErrBudgetExceeded):
		return "", fmt.Errorf("todo-triage: tool %s: %w", tc.Name, err)
	}
	return "error: " + err.Error(), nil
}
