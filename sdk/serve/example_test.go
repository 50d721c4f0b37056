package serve_test

import (
	"context"
	"encoding/json"

	"github.com/troupe-dev/troupe/sdk"
	"github.com/troupe-dev/troupe/sdk/serve"
)

// A plugin's main: one tool, served to the troupe host that started it.
func ExampleServe() {
	serve.Serve(sdk.Plugin{
		Name:    "hello",
		Version: "0.1.0",
		Tools: []sdk.Tool{&sdk.ToolFunc{
			ToolSpec: sdk.ToolSpec{Name: "hello", Description: "Says hello.", Parameters: json.RawMessage(`{"type":"object"}`), ReadOnly: true},
			Func: func(_ context.Context, req sdk.CallRequest) (*sdk.CallResponse, error) {
				return &sdk.CallResponse{Text: "hello, agent " + req.Agent.ID}, nil
			},
		}},
	})
}
