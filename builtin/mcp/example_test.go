//go:build linux

package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/mcp"
)

type greetIn struct {
	Name string `json:"name"`
}

// A pool gives agents a server's tools. Here the server runs in this
// process; an entry of .mcp.json would name a command or a URL instead.
func Example() {
	server := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "greeter", Version: "1"}, nil)
	mcpsdk.AddTool(server, &mcpsdk.Tool{Name: "greet", Description: "Greets someone."},
		func(_ context.Context, _ *mcpsdk.CallToolRequest, in greetIn) (*mcpsdk.CallToolResult, any, error) {
			return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "Hello, " + in.Name}}}, nil, nil
		})
	pool, err := mcp.NewPool(mcp.Config{
		Servers: []agenttypes.MCPServer{{Name: "greeter", Command: "greeter-mcp"}},
		Connect: func(ctx context.Context, _ agenttypes.MCPServer) (mcpsdk.Transport, error) {
			client, srv := mcpsdk.NewInMemoryTransports()
			_, err := server.Connect(ctx, srv, nil)
			return client, err
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close(context.Background())
	tools, err := pool.Tools(context.Background(), "greeter")
	if err != nil {
		fmt.Println(err)
		return
	}
	greet := tools[0]
	out, err := greet.Call(context.Background(), json.RawMessage(`{"name":"Ada"}`))
	fmt.Println(greet.Spec().Name, out, err)
	_, err = greet.Call(context.Background(), json.RawMessage(`{"name":7}`))
	fmt.Println(err != nil)
	// Output:
	// mcp__greeter__greet Hello, Ada <nil>
	// true
}
