package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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
