//go:build linux

package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/mcp"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

// BenchmarkStdioCall is one tool call round trip to the same stdio
// server, three ways side by side: through the manager (an agent whose
// model calls the server's tool once a turn: the policy step, budgets,
// events, the schema check, the keeper), through a pool's tool alone,
// and with the SDK's client alone.
func BenchmarkStdioCall(b *testing.B) {
	ctx := context.Background()
	args := json.RawMessage(`{"text":"hello"}`)
	b.Run("manager", func(b *testing.B) {
		entry := stdioEntry("", nil)
		pool := benchPool(b)
		reg := agenttypes.NewRegistry()
		if err := reg.RegisterType(agenttypes.Type{Name: "caller", Description: "Calls echo.",
			Tools: []string{"mcp__test__echo"}, MCPServers: []agenttypes.MCPServer{entry}}); err != nil {
			b.Fatal(err)
		}
		// One turn per call: the model asks for echo b.N times, then ends.
		steps := make([]scripted.Step, b.N+1)
		for i := range b.N {
			steps[i] = scripted.Step{Calls: []scripted.Call{{Name: "mcp__test__echo", Args: string(args)}}, InputTokens: 1, OutputTokens: 1}
		}
		steps[b.N] = scripted.Step{Text: "done", InputTokens: 1, OutputTokens: 1}
		model := scripted.New(steps...).WithoutRecording()
		mgr, err := manager.New(manager.Config{Registry: reg, MCP: pool, DefaultModel: "scripted",
			Models: manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil })})
		if err != nil {
			b.Fatal(err)
		}
		defer mgr.Close(ctx)
		if _, err := pool.Tools(ctx, "test"); err != nil { // started before the clock
			b.Fatal(err)
		}
		b.ResetTimer()
		a, err := mgr.Spawn(ctx, manager.SpawnRequest{Type: "caller", Task: "call echo", Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		res, err := a.Wait(ctx)
		if err != nil || res.State != manager.Completed || res.ToolCalls != b.N {
			b.Fatalf("run: %v %s %s, %d calls", err, res.State, res.Error, res.ToolCalls)
		}
	})
	b.Run("pool-tool", func(b *testing.B) {
		pool := benchPool(b)
		tools, err := pool.Tools(ctx, "test")
		if err != nil {
			b.Fatal(err)
		}
		var echo agenttypes.Tool
		for _, t := range tools {
			if t.Spec().Name == "mcp__test__echo" {
				echo = t
			}
		}
		b.ResetTimer()
		for b.Loop() {
			if _, err := echo.Call(ctx, args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sdk-client", func(b *testing.B) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), serveEnv+"=1", "GORACE=atexit_sleep_ms=0")
		client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcpsdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		b.ResetTimer()
		for b.Loop() {
			if _, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "echo", Arguments: args}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func benchPool(b *testing.B) *mcp.Pool {
	b.Helper()
	pool, err := mcp.NewPool(mcp.Config{Servers: []agenttypes.MCPServer{stdioEntry("", nil)}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = pool.Close(context.Background()) })
	return pool
}
