package mcpserver_test

import (
	"context"
	"fmt"
	"strings"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/mcpserver"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

// A manager's types served to an MCP client. Here the client is in the
// same process; troupe mcp serve speaks over stdio or HTTP instead.
func Example() {
	reg := agenttypes.NewRegistry()
	_ = reg.RegisterType(agenttypes.Type{Name: "summarise", Description: "Summarises a text."})
	model := scripted.New(scripted.Step{Text: "A short summary."})
	var srv *mcpserver.Server
	mgr, _ := manager.New(manager.Config{
		Registry:     reg,
		DefaultModel: "scripted",
		Models:       manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil }),
		// Questions of subagents for the user go to the client.
		AskUser: func(ctx context.Context, q manager.QuestionInfo) (string, error) { return srv.AskUser(ctx, q) },
	})
	defer mgr.Close(context.Background())
	srv, err := mcpserver.New(mcpserver.Config{Manager: mgr, Dir: ".", Limit: agenttypes.Budget{MaxTurns: 10}})
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx := context.Background()
	clientEnd, serverEnd := mcpsdk.NewInMemoryTransports()
	ss, _ := srv.MCP().Connect(ctx, serverEnd, nil)
	defer ss.Wait()
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "example", Version: "1"}, nil)
	cs, err := client.Connect(ctx, clientEnd, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cs.Close()

	tools, _ := cs.ListTools(ctx, nil)
	for _, t := range tools.Tools {
		fmt.Println("tool:", t.Name)
	}
	res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "summarise", Arguments: map[string]any{"task": "summarise the README"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	report, _, _ := strings.Cut(res.Content[0].(*mcpsdk.TextContent).Text, "\n\n[run ")
	fmt.Println(report)
	// Output:
	// tool: summarise
	// A short summary.
}
