//go:build linux

package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/mcp"
)

// BenchmarkStdioCall is one tool call round trip to the same stdio
// server: through a pool's tool (schema check, keeper, result text)
// beside the SDK's client alone.
func BenchmarkStdioCall(b *testing.B) {
	ctx := context.Background()
	args := json.RawMessage(`{"text":"hello"}`)
	b.Run("pool-tool", func(b *testing.B) {
		pool, err := mcp.NewPool(mcp.Config{Servers: []agenttypes.MCPServer{stdioEntry("", nil)}})
		if err != nil {
			b.Fatal(err)
		}
		defer pool.Close(ctx)
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
