package sdktest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/troupe-dev/troupe/sdk"
	"github.com/troupe-dev/troupe/sdk/sdktest"
)

// shout is a small tool that checks its arguments strictly.
var shout = &sdk.ToolFunc{
	ToolSpec: sdk.ToolSpec{
		Name:        "shout",
		Description: "Upper-cases text.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`),
		ReadOnly:    true,
	},
	Func: func(ctx context.Context, req sdk.CallRequest) (*sdk.CallResponse, error) {
		var args struct {
			Text string `json:"text"`
		}
		// Strictly: no unknown fields, nothing after the object.
		dec := json.NewDecoder(bytes.NewReader(req.Args))
		dec.DisallowUnknownFields()
		err := dec.Decode(&args)
		if _, end := dec.Token(); err != nil || end != io.EOF || args.Text == "" {
			return nil, sdk.Errorf(sdk.CodeInvalidArgument, `shout takes {"text": "..."}`)
		}
		return &sdk.CallResponse{Text: strings.ToUpper(args.Text)}, nil
	},
}

func ExampleCheckTool() {
	// In a test: sdktest.TestTool(t, shout, cases...).
	err := sdktest.CheckTool(shout,
		sdktest.Case{Args: `{"text":"hi"}`, Want: []string{"HI"}, Deterministic: true},
		sdktest.Case{Args: `{"text":""}`, WantErr: true},
	)
	fmt.Println("problems:", err)

	// A sloppy tool that takes anything is caught.
	sloppy := &sdk.ToolFunc{ToolSpec: shout.ToolSpec, Func: func(ctx context.Context, req sdk.CallRequest) (*sdk.CallResponse, error) {
		var args struct{ Text string }
		_ = json.Unmarshal(req.Args, &args)
		return &sdk.CallResponse{Text: strings.ToUpper(args.Text)}, nil
	}}
	err = sdktest.CheckTool(sloppy, sdktest.Case{Args: `{"text":"hi"}`})
	fmt.Println(strings.Split(err.Error(), "\n")[0])
	// Output:
	// problems: <nil>
	// sdktest: tool "shout": malformed JSON: want an error, got none (args "{", text "")
}

func ExampleCheckLoop() {
	// A loop that asks the model once, with the agent's tools, and runs
	// the one tool call it asks for.
	loop := sdk.LoopFunc(func(ctx context.Context, s sdk.Session, req sdk.RunRequest) (*sdk.RunResponse, error) {
		msgs := []sdk.Message{{Role: sdk.RoleUser, Text: req.Task}}
		for {
			resp, err := s.Generate(ctx, sdk.GenerateRequest{Messages: msgs})
			if err != nil {
				return nil, fmt.Errorf("model: %w", err)
			}
			if len(resp.ToolCalls) == 0 {
				return &sdk.RunResponse{Output: resp.Text}, nil
			}
			msgs = append(msgs, sdk.Message{Role: sdk.RoleAssistant, ToolCalls: resp.ToolCalls})
			for _, call := range resp.ToolCalls {
				out, err := s.CallTool(ctx, call)
				if err != nil {
					return nil, fmt.Errorf("tool %s: %w", call.Name, err)
				}
				msgs = append(msgs, sdk.Message{Role: sdk.RoleTool, ToolCallID: call.ID, Name: call.Name, Text: out.Text})
			}
		}
	})
	err := sdktest.CheckLoop(loop, sdktest.Script{
		Task:  "say hi loudly",
		Tools: []sdk.Tool{shout},
		Replies: []sdk.GenerateResponse{
			{ToolCalls: []sdk.ToolCall{{ID: "1", Name: "shout", Args: json.RawMessage(`{"text":"hi"}`)}}},
			{Text: "HI"},
		},
		Want: []string{"HI"},
	})
	fmt.Println("problems:", err)
	// Output:
	// problems: <nil>
}

func ExampleNewSession() {
	s := sdktest.NewSession(sdktest.Script{
		Tools:   []sdk.Tool{shout},
		Replies: []sdk.GenerateResponse{{Text: "hello"}},
	})
	ctx := context.Background()
	resp, _ := s.Generate(ctx, sdk.GenerateRequest{})
	fmt.Println(resp.Text)
	resp, _ = s.Generate(ctx, sdk.GenerateRequest{})
	fmt.Println(resp.Text)
	_, err := s.CallTool(ctx, sdk.ToolCall{Name: "rm"})
	fmt.Println(err)
	fmt.Println(s.Violations())
	// Output:
	// hello
	// sdktest: end of script
	// tool "rm" is not one of the agent's tools
	// [called tool "rm", which Session.Tools does not list]
}
