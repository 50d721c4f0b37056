package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/sdk"
	"github.com/troupe-dev/troupe/sdk/sdktest"
)

// fakeGrep stands in for the host's builtin grep tool.
var fakeGrep = &sdk.ToolFunc{
	ToolSpec: sdk.ToolSpec{
		Name:        "grep",
		Description: "Search file contents.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string"}},"required":["pattern"],"additionalProperties":false}`),
		ReadOnly:    true,
	},
	Func: func(ctx context.Context, req sdk.CallRequest) (*sdk.CallResponse, error) {
		return &sdk.CallResponse{Text: "store/store.go:5:var cache = map[string]string{}\nmain.go:9:\tcache[k] = v"}, nil
	},
}

// triageScript is a run in which the model greps once, then answers.
func triageScript(t *testing.T) sdktest.Script {
	return sdktest.Script{
		Task:  "which TODOs matter most?",
		Type:  "todo-triage",
		Agent: sdk.Agent{ID: "agent-1", Dir: repo(t, sample)},
		Tools: []sdk.Tool{todosTool(), fakeGrep},
		Replies: []sdk.GenerateResponse{
			{ToolCalls: []sdk.ToolCall{{ID: "c1", Name: "grep", Args: json.RawMessage(`{"pattern":"cache"}`)}}},
			{Text: "1. store/store.go:3 — the cache is written from main without a lock."},
		},
		Want: []string{"store/store.go:3"},
	}
}

func TestTriageLoopConforms(t *testing.T) {
	sdktest.TestLoop(t, triage{}, triageScript(t))
}

func TestTriageCallsTodosThenTheModelsTools(t *testing.T) {
	script := triageScript(t)
	s := sdktest.NewSession(script)
	resp, err := triage{}.Run(context.Background(), s, sdk.RunRequest{Task: script.Task, Type: script.Type, Agent: script.Agent})
	require.NoError(t, err)
	assert.Equal(t, "1. store/store.go:3 — the cache is written from main without a lock.", resp.Output)

	calls := s.Calls()
	require.Len(t, calls, 2)
	assert.Equal(t, "todos", calls[0].Name, "the loop lists the comments itself")
	assert.Equal(t, "grep", calls[1].Name, "then runs the builtin tool the model asked for")

	reqs := s.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, []string{"grep", "todos"}, reqs[0].Tools, "read is offered only when the agent has it")
	assert.Contains(t, reqs[0].Messages[1].Text, "store/store.go:3: // FIXME: not safe for concurrent use", "the model sees what todos found")
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	assert.Equal(t, sdk.RoleTool, last.Role)
	assert.Contains(t, last.Text, "var cache", "the model sees grep's answer")
	assert.Equal(t, []string{"listed the TODO comments"}, s.Events())
	assert.Empty(t, s.Violations())
}

func TestTriageWithoutTheTodosTool(t *testing.T) {
	script := triageScript(t)
	script.Tools = []sdk.Tool{fakeGrep}
	s := sdktest.NewSession(script)
	_, err := triage{}.Run(context.Background(), s, sdk.RunRequest{Task: script.Task})
	require.NoError(t, err)
	for _, c := range s.Calls() {
		assert.NotEqual(t, "todos", c.Name, "a tool the agent may not use is never called")
	}
	assert.Contains(t, s.Requests()[0].Messages[1].Text, "the todos tool is not available")
}

func TestTriageToolErrorGoesToTheModel(t *testing.T) {
	script := triageScript(t)
	script.Replies[0].ToolCalls[0].Args = json.RawMessage(`{"pattern":1}`)
	script.Tools = []sdk.Tool{todosTool(), &sdk.ToolFunc{ToolSpec: fakeGrep.ToolSpec, Func: func(context.Context, sdk.CallRequest) (*sdk.CallResponse, error) {
		return nil, sdk.Errorf(sdk.CodeInvalidArgument, "pattern must be a string")
	}}}
	s := sdktest.NewSession(script)
	_, err := triage{}.Run(context.Background(), s, sdk.RunRequest{Task: script.Task})
	require.NoError(t, err)
	reqs := s.Requests()
	require.Len(t, reqs, 2)
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	assert.Equal(t, "error: pattern must be a string", last.Text)
}

func TestTriageTypeIsComplete(t *testing.T) {
	typ := triageType()
	assert.Equal(t, "todo-triage", typ.Name)
	assert.NotEmpty(t, typ.Description)
	assert.NotNil(t, typ.Loop)
	assert.Subset(t, typ.Tools, []string{"todos", "grep"}, "the type allows its own tool and the builtin grep")
	assert.Equal(t, "todos", todosTool().Spec().Name, "the tool the type names is the plugin's")
}
