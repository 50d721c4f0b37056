package manager_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tmc/langchaingo/llms"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

// A manager runs an agent through its model ↔ tool loop. Here the model is
// scripted: it asks for one tool call, then answers.
func Example() {
	reg := agenttypes.NewRegistry()
	_ = reg.RegisterTool(&agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "add", Description: "adds two numbers", ReadOnly: true},
		Func: func(_ context.Context, args json.RawMessage) (string, error) {
			var in struct{ A, B int }
			if err := json.Unmarshal(args, &in); err != nil {
				return "", err
			}
			return fmt.Sprint(in.A + in.B), nil
		},
	})
	_ = reg.RegisterType(agenttypes.Type{Name: "calc", Description: "does sums", Tools: []string{"add"}})

	model := scripted.New(
		scripted.Step{Calls: []scripted.Call{{Name: "add", Args: `{"a":2,"b":3}`}}},
		scripted.Step{Text: "2 + 3 = 5"},
	)
	mgr, err := manager.New(manager.Config{
		Registry:     reg,
		Models:       manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil }),
		DefaultModel: "scripted",
	})
	if err != nil {
		panic(err)
	}
	defer mgr.Close(context.Background())

	agent, err := mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "calc", Task: "what is 2 + 3?"})
	if err != nil {
		panic(err)
	}
	res, _ := agent.Wait(context.Background())
	fmt.Println(res.State, res.Reason, res.ToolCalls, "tool call")
	fmt.Println(res.Output)
	// Output:
	// completed done 1 tool call
	// 2 + 3 = 5
}

// Budgets are hard limits: a run that needs more turns than it has fails
// with a budget reason and returns what it had so far.
func ExampleManager_Spawn_budget() {
	reg := agenttypes.NewRegistry()
	_ = reg.RegisterTool(&agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "look", Description: "looks"},
		Func:     func(context.Context, json.RawMessage) (string, error) { return "nothing yet", nil },
	})
	_ = reg.RegisterType(agenttypes.Type{Name: "seeker", Description: "keeps looking", Tools: []string{"look"}})
	look := scripted.Step{Text: "still looking", Calls: []scripted.Call{{Name: "look"}}}
	model := scripted.New(look, look, look, look)
	mgr, _ := manager.New(manager.Config{
		Registry:     reg,
		Models:       manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil }),
		DefaultModel: "scripted",
	})
	defer mgr.Close(context.Background())

	agent, _ := mgr.Spawn(context.Background(), manager.SpawnRequest{
		Type: "seeker", Task: "find it", Budget: agenttypes.Budget{MaxTurns: 2},
	})
	res, _ := agent.Wait(context.Background())
	fmt.Println(res.State, res.Reason, res.Partial)
	fmt.Println(res.Output)
	// Output:
	// failed budget_turns true
	// still looking
}

// A subscription's events, read on the reader's own goroutine: the loop
// ends once the manager is closed and every event was delivered.
func ExampleSubscription_Events() {
	reg := agenttypes.NewRegistry()
	_ = reg.RegisterTool(&agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "look", Description: "looks", ReadOnly: true},
		Func:     func(context.Context, json.RawMessage) (string, error) { return "a cat", nil },
	})
	_ = reg.RegisterType(agenttypes.Type{Name: "seer", Description: "looks once", Tools: []string{"look"}})
	model := scripted.New(
		scripted.Step{Calls: []scripted.Call{{Name: "look"}}},
		scripted.Step{Text: "I saw a cat"},
	)
	mgr, _ := manager.New(manager.Config{
		Registry:     reg,
		Models:       manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil }),
		DefaultModel: "scripted",
	})
	sub := mgr.Subscribe()
	agent, _ := mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "seer", Task: "look"})
	_, _ = agent.Wait(context.Background())
	_ = mgr.Close(context.Background())

	for e := range sub.Events() {
		switch e.Kind {
		case manager.EventToolResult:
			fmt.Println(e.Kind, e.Tool, e.Text)
		case manager.EventCompleted:
			fmt.Println(e.Kind, e.Text)
		}
	}
	// Output:
	// tool_result look a cat
	// completed I saw a cat
}

// A tree of agents is one trace: here the spans of one agent that calls
// a tool once and answers, recorded in memory.
func ExampleConfig_tracerProvider() {
	reg := agenttypes.NewRegistry()
	_ = reg.RegisterTool(&agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "clock", Description: "says the time"},
		Func:     func(context.Context, json.RawMessage) (string, error) { return "noon", nil },
	})
	_ = reg.RegisterType(agenttypes.Type{Name: "asker", Description: "asks the time", Prompt: "Ask.", Tools: []string{"clock"}})
	model := scripted.New(
		scripted.Step{Calls: []scripted.Call{{Name: "clock", Args: `{}`}}, InputTokens: 40, OutputTokens: 5},
		scripted.Step{Text: "It is noon.", InputTokens: 60, OutputTokens: 4},
	)
	spans := tracetest.NewSpanRecorder()
	mgr, _ := manager.New(manager.Config{
		Registry:       reg,
		Models:         manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil }),
		DefaultModel:   "scripted:v1",
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)),
	})
	defer mgr.Close(context.Background())
	a, _ := mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "asker", Task: "what time is it?"})
	_, _ = a.Wait(context.Background())

	for _, s := range spans.Ended() {
		line := s.Name()
		for _, kv := range s.Attributes() {
			switch kv.Key {
			case "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.provider.name":
				line += fmt.Sprintf(" %s=%s", kv.Key, kv.Value.String())
			}
		}
		fmt.Println(line)
	}
	// Output:
	// chat v1 gen_ai.provider.name=scripted gen_ai.usage.input_tokens=40 gen_ai.usage.output_tokens=5
	// execute_tool clock
	// chat v1 gen_ai.provider.name=scripted gen_ai.usage.input_tokens=60 gen_ai.usage.output_tokens=4
	// invoke_agent asker gen_ai.provider.name=scripted gen_ai.usage.input_tokens=100 gen_ai.usage.output_tokens=9
}
