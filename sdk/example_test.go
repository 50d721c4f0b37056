package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/troupe-dev/troupe/sdk"
)

// A plugin's tool is an sdk.Tool; sdk.ToolFunc makes one from a spec and a
// function. Errors keep their meaning across the process boundary.
func ExampleToolFunc() {
	upper := &sdk.ToolFunc{
		ToolSpec: sdk.ToolSpec{
			Name:        "upper",
			Description: "Upper-cases text.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`),
			ReadOnly:    true,
		},
		Func: func(_ context.Context, req sdk.CallRequest) (*sdk.CallResponse, error) {
			var in struct{ Text string }
			if err := json.Unmarshal(req.Args, &in); err != nil || in.Text == "" {
				return nil, sdk.Errorf(sdk.CodeInvalidArgument, "give text to upper-case")
			}
			return &sdk.CallResponse{Text: strings.ToUpper(in.Text)}, nil
		},
	}
	out, _ := upper.Call(context.Background(), sdk.CallRequest{Args: json.RawMessage(`{"text":"troupe"}`)})
	fmt.Println(out.Text)
	_, err := upper.Call(context.Background(), sdk.CallRequest{Args: json.RawMessage(`{}`)})
	fmt.Println(err, errors.Is(err, sdk.ErrInvalidArgument))
	// Output:
	// TROUPE
	// give text to upper-case true
}

// A type whose agents change code works in a workspace of its own (the
// default for a type that lists write, edit, run or merge), and runs only
// the commands its Run policy allows; setup commands prepare each new
// workspace and must be allowed too. The host checks all of it when it
// loads the plugin, and refuses the type, saying why, when it is unusable.
func ExampleType_run() {
	fixer := sdk.Type{
		Name:        "fixer",
		Description: "Makes the failing test pass, and checks it with go test.",
		Prompt:      "Fix the failing test in {{.Dir}}; run the tests to check.",
		Tools:       []string{"read", "grep", "edit", "run"},
		Workspace:   sdk.WorkspaceWorktree,
		Run: sdk.RunPolicy{
			Allow:   []string{"go test", "go vet", "go mod download"},
			Timeout: 5 * time.Minute,
			Network: true, // go mod download fetches modules
		},
		Setup: []string{"go mod download"},
	}
	p := sdk.Plugin{Name: "fixers", Version: "0.1.0", Types: []sdk.Type{fixer}}
	fmt.Println(p.Types[0].Name, p.Types[0].Run.Allow, p.Types[0].Run.Network)
	// Output:
	// fixer [go test go vet go mod download] true
}
