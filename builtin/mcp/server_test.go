//go:build linux

package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/mcp"
)

// Variables that make the test binary something else.
const (
	serveEnv = "TROUPE_MCP_TEST_SERVE" // an MCP server over stdio
	pidsEnv  = "TROUPE_MCP_TEST_PIDS"  // the file a server appends its PID to
	ownerEnv = "TROUPE_MCP_TEST_OWNER" // a pool's owner, killed by the test
	// ownerEntryEnv gives the owner the server it starts, an entry as
	// JSON, instead of this binary's.
	ownerEntryEnv = "TROUPE_MCP_TEST_OWNER_ENTRY"
)

func serveIfAsked() {
	switch {
	case os.Getenv(serveEnv) != "":
		if path := os.Getenv(pidsEnv); path != "" {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err == nil {
				fmt.Fprintln(f, os.Getpid())
				f.Close()
			}
		}
		err := newTestServer(nil).Run(context.Background(), &mcpsdk.StdioTransport{})
		if err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	case os.Getenv(ownerEnv) != "":
		runOwner(os.Getenv(ownerEnv))
	}
}

// runOwner starts a server through a pool, says "described" on its
// standard output once it has the server's tools, then waits to be
// killed.
func runOwner(pids string) {
	entry := stdioEntry(pids, nil)
	var err error
	if raw := os.Getenv(ownerEntryEnv); raw != "" {
		entry = agenttypes.MCPServer{}
		err = json.Unmarshal([]byte(raw), &entry)
	}
	var pool *mcp.Pool
	if err == nil {
		pool, err = mcp.NewPool(mcp.Config{Servers: []agenttypes.MCPServer{entry}})
	}
	if err == nil {
		_, err = pool.Tools(context.Background(), entry.Name)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println("described")
	time.Sleep(time.Hour)
}

func stdioEntry(pids string, env map[string]string) agenttypes.MCPServer {
	// A binary built with -race sleeps a second at exit unless told not to.
	e := map[string]string{serveEnv: "1", pidsEnv: pids, "GORACE": "atexit_sleep_ms=0"}
	for k, v := range env {
		e[k] = v
	}
	return agenttypes.MCPServer{Name: "test", Command: os.Args[0], Args: []string{"-test.run=^$"}, Env: e, Source: "project/.mcp.json"}
}

type echoIn struct {
	Text string `json:"text" jsonschema:"what to echo"`
}

type bigIn struct {
	N int `json:"n"`
}

type none struct{}

func text(s string) *mcpsdk.CallToolResult {
	return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: s}}}
}

// newTestServer is the server the tests speak to; calls counts the
// calls that reach it.
func newTestServer(calls *atomic.Int64) *mcpsdk.Server {
	count := func() {
		if calls != nil {
			calls.Add(1)
		}
	}
	s := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "test", Version: "1"}, nil)
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "echo", Description: "Echoes its text."}, func(_ context.Context, _ *mcpsdk.CallToolRequest, in echoIn) (*mcpsdk.CallToolResult, any, error) {
		count()
		return text(in.Text), nil, nil
	})
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "env", Description: "Its environment."}, func(context.Context, *mcpsdk.CallToolRequest, none) (*mcpsdk.CallToolResult, any, error) {
		count()
		return text(strings.Join(os.Environ(), "\n")), nil, nil
	})
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "pid", Description: "Its process ID."}, func(context.Context, *mcpsdk.CallToolRequest, none) (*mcpsdk.CallToolResult, any, error) {
		count()
		return text(strconv.Itoa(os.Getpid())), nil, nil
	})
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "big", Description: "n bytes."}, func(_ context.Context, _ *mcpsdk.CallToolRequest, in bigIn) (*mcpsdk.CallToolResult, any, error) {
		count()
		return text(strings.Repeat("x", in.N)), nil, nil
	})
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "mixed", Description: "Text and an image."}, func(context.Context, *mcpsdk.CallToolRequest, none) (*mcpsdk.CallToolResult, any, error) {
		count()
		return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{
			&mcpsdk.TextContent{Text: "a chart:"},
			&mcpsdk.ImageContent{MIMEType: "image/png", Data: make([]byte, 300)},
			&mcpsdk.ResourceLink{Name: "data", URI: "file:///data.csv"},
		}}, nil, nil
	})
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "fail", Description: "Fails."}, func(context.Context, *mcpsdk.CallToolRequest, none) (*mcpsdk.CallToolResult, any, error) {
		count()
		return &mcpsdk.CallToolResult{IsError: true, Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "the disk is full"}}}, nil, nil
	})
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "hang", Description: "Never answers."}, func(ctx context.Context, _ *mcpsdk.CallToolRequest, _ none) (*mcpsdk.CallToolResult, any, error) {
		count()
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "crash", Description: "Exits."}, func(context.Context, *mcpsdk.CallToolRequest, none) (*mcpsdk.CallToolResult, any, error) {
		os.Exit(3)
		return nil, nil, nil
	})
	return s
}

// inMemory is a pool whose servers are newTestServer in this process.
func inMemory(t *testing.T, calls *atomic.Int64, cfg mcp.Config) *mcp.Pool {
	t.Helper()
	srv := newTestServer(calls)
	cfg.Servers = []agenttypes.MCPServer{{Name: "test", Command: "unused", Source: "project/.mcp.json"}}
	cfg.Connect = func(ctx context.Context, _ agenttypes.MCPServer) (mcpsdk.Transport, error) {
		ct, st := mcpsdk.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
	pool, err := mcp.NewPool(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, pool.Close(context.Background())) })
	return pool
}

// toolNamed returns the pool's tool of that name on server "test".
func toolNamed(t *testing.T, pool *mcp.Pool, name string) agenttypes.Tool {
	t.Helper()
	tools, err := pool.Tools(context.Background(), "test")
	require.NoError(t, err)
	for _, tool := range tools {
		if tool.Spec().Name == agenttypes.MCPToolName("test", name) {
			return tool
		}
	}
	t.Fatalf("no tool %s among %d", name, len(tools))
	return nil
}

// pidsIn reads the process IDs a file holds, one a line.
func pidsIn(t *testing.T, path string) []int {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		require.NoError(t, err)
		pids = append(pids, pid)
	}
	return pids
}

func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(data), ')')
	return i >= 0 && !strings.HasPrefix(strings.TrimSpace(string(data[i+1:])), "Z")
}

func pidsFile(t *testing.T) string { return filepath.Join(t.TempDir(), "pids") }
