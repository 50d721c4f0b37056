//go:build linux

package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/mcp"
)

func TestToolsAreNamedAndDescribedAsTheirServerSays(t *testing.T) {
	echo := toolNamed(t, inMemory(t, nil, mcp.Config{}), "echo")
	spec := echo.Spec()
	assert.Equal(t, "mcp__test__echo", spec.Name)
	assert.Equal(t, "Echoes its text.", spec.Description)
	var schema struct {
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	require.NoError(t, json.Unmarshal(spec.Parameters, &schema))
	assert.Contains(t, schema.Properties, "text")
	assert.Equal(t, []string{"text"}, schema.Required)
	out, err := echo.Call(context.Background(), json.RawMessage(`{"text":"hello"}`))
	require.NoError(t, err)
	assert.Equal(t, "hello", out)
}

func TestArgumentsOutsideTheSchemaAreRefusedBeforeTheCall(t *testing.T) {
	var calls atomic.Int64
	echo := toolNamed(t, inMemory(t, &calls, mcp.Config{}), "echo")
	for _, args := range []string{`{}`, `{"text":3}`, `[1]`, `{"text":`} {
		_, err := echo.Call(context.Background(), json.RawMessage(args))
		require.ErrorIs(t, err, mcp.ErrInvalidArguments, args)
		assert.Contains(t, err.Error(), "mcp__test__echo")
	}
	assert.Zero(t, calls.Load(), "no call reached the server")
}

func TestResultsAreBoundedAndOtherContentSummarised(t *testing.T) {
	pool := inMemory(t, nil, mcp.Config{MaxResult: 1000})
	out, err := toolNamed(t, pool, "big").Call(context.Background(), json.RawMessage(`{"n":5000}`))
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("x", 1000)+"\n[4000 more bytes of the result cut]", out)
	out, err = toolNamed(t, pool, "mixed").Call(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, "a chart:\n[image, image/png, 300 bytes]\n[resource data: file:///data.csv]", out)
}

func TestAResultMarkedAsAnErrorIsAToolError(t *testing.T) {
	_, err := toolNamed(t, inMemory(t, nil, mcp.Config{}), "fail").Call(context.Background(), nil)
	require.ErrorIs(t, err, mcp.ErrToolFailed)
	assert.Contains(t, err.Error(), "the disk is full")
}

func TestAHungCallEndsAtTheDeadline(t *testing.T) {
	pool := inMemory(t, nil, mcp.Config{})
	hang := toolNamed(t, pool, "hang")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := hang.Call(ctx, nil)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	// The session survives a call that timed out.
	out, err := toolNamed(t, pool, "echo").Call(context.Background(), json.RawMessage(`{"text":"still here"}`))
	require.NoError(t, err)
	assert.Equal(t, "still here", out)
}

func TestAnUnknownServerIsNamedWithTheKnownOnes(t *testing.T) {
	_, err := inMemory(t, nil, mcp.Config{}).Tools(context.Background(), "github")
	require.ErrorIs(t, err, mcp.ErrUnknownServer)
	assert.Contains(t, err.Error(), `"github"`)
	assert.Contains(t, err.Error(), "test")
}

func TestAStdioServerStartsOnTheFirstCallAndIsSharedUntilClose(t *testing.T) {
	pids := pidsFile(t)
	pool, err := mcp.NewPool(mcp.Config{Servers: []agenttypes.MCPServer{stdioEntry(pids, nil)}, CacheDir: t.TempDir()})
	require.NoError(t, err)
	assert.Empty(t, pidsIn(t, pids), "nothing starts before a call needs it")
	echo := toolNamed(t, pool, "echo")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			out, err := echo.Call(context.Background(), json.RawMessage(`{"text":"hi"}`))
			assert.NoError(t, err)
			assert.Equal(t, "hi", out)
		})
	}
	wg.Wait()
	started := pidsIn(t, pids)
	require.Len(t, started, 1, "one server for every call of the run")
	require.True(t, alive(started[0]))
	require.NoError(t, pool.Close(context.Background()))
	assert.False(t, alive(started[0]), "Close ends the server")
	_, err = echo.Call(context.Background(), json.RawMessage(`{"text":"hi"}`))
	assert.ErrorIs(t, err, mcp.ErrClosed)
}

func TestACrashedServerIsRestartedOnceThenItsToolsFailNamingIt(t *testing.T) {
	pids := pidsFile(t)
	pool, err := mcp.NewPool(mcp.Config{Servers: []agenttypes.MCPServer{stdioEntry(pids, nil)}})
	require.NoError(t, err)
	defer pool.Close(context.Background())
	echo, crash := toolNamed(t, pool, "echo"), toolNamed(t, pool, "crash")
	ctx := context.Background()
	_, err = crash.Call(ctx, nil)
	require.ErrorIs(t, err, mcp.ErrDown)
	out, err := echo.Call(ctx, json.RawMessage(`{"text":"back"}`))
	require.NoError(t, err, "restarted once")
	assert.Equal(t, "back", out)
	require.Len(t, pidsIn(t, pids), 2)
	_, err = crash.Call(ctx, nil)
	require.ErrorIs(t, err, mcp.ErrDown)
	_, err = echo.Call(ctx, json.RawMessage(`{"text":"again"}`))
	require.ErrorIs(t, err, mcp.ErrDown)
	assert.Contains(t, err.Error(), `MCP server "test" (declared in project/.mcp.json) stopped twice`)
	assert.Len(t, pidsIn(t, pids), 2, "not started a third time")
	for _, pid := range pidsIn(t, pids) {
		assert.False(t, alive(pid))
	}
}

func TestNoServerOutlivesItsOwnerKilledWithSIGKILL(t *testing.T) {
	pids := pidsFile(t)
	owner := exec.Command(os.Args[0], "-test.run=^$")
	owner.Env = append(os.Environ(), ownerEnv+"="+pids)
	require.NoError(t, owner.Start())
	server := waitForPID(t, pids)
	t.Cleanup(func() { _ = syscall.Kill(server, syscall.SIGKILL) })
	require.NoError(t, owner.Process.Signal(syscall.SIGKILL))
	_ = owner.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for alive(server) {
		require.True(t, time.Now().Before(deadline), "server %d outlived its owner", server)
		time.Sleep(10 * time.Millisecond)
	}
}

// waitForPID waits for a server to write its process ID to path; the
// bound only keeps a broken test from hanging.
func waitForPID(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if pids := pidsIn(t, path); len(pids) > 0 {
			return pids[0]
		}
		require.True(t, time.Now().Before(deadline), "no server started")
		time.Sleep(10 * time.Millisecond)
	}
}

func TestAStdioServerGetsTheScrubbedEnvironmentAndOnlyWhatItsEntryNames(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-secret")
	t.Setenv("TROUPE_MCP_TEST_TOKEN", "tok-123")
	entry := stdioEntry(pidsFile(t), map[string]string{"SERVICE_TOKEN": "${TROUPE_MCP_TEST_TOKEN}", "MODE": "${TROUPE_MCP_TEST_UNSET:-quiet}"})
	pool, err := mcp.NewPool(mcp.Config{Servers: []agenttypes.MCPServer{entry}})
	require.NoError(t, err)
	defer pool.Close(context.Background())
	out, err := toolNamed(t, pool, "env").Call(context.Background(), nil)
	require.NoError(t, err)
	env := strings.Split(out, "\n")
	assert.Contains(t, env, "SERVICE_TOKEN=tok-123")
	assert.Contains(t, env, "MODE=quiet")
	assert.NotContains(t, out, "sk-secret")
	assert.NotContains(t, out, "TROUPE_MCP_TEST_TOKEN", "only what the entry names")
	assert.NotContains(t, out, "TROUPE_KEEPER")
}

func TestAVariableTheEnvironmentLacksIsNamedAndNothingStarts(t *testing.T) {
	pids := pidsFile(t)
	entry := stdioEntry(pids, map[string]string{"SERVICE_TOKEN": "${TROUPE_MCP_TEST_NEVER_SET}"})
	pool, err := mcp.NewPool(mcp.Config{Servers: []agenttypes.MCPServer{entry}})
	require.NoError(t, err)
	defer pool.Close(context.Background())
	_, err = pool.Tools(context.Background(), "test")
	require.ErrorIs(t, err, mcp.ErrStart)
	assert.Contains(t, err.Error(), "${TROUPE_MCP_TEST_NEVER_SET}")
	assert.Contains(t, err.Error(), "project/.mcp.json")
	assert.Empty(t, pidsIn(t, pids))
}

func TestAServerThatDoesNotStartOrFailsTheHandshakeIsNamedWithItsFile(t *testing.T) {
	for name, entry := range map[string]agenttypes.MCPServer{
		"no such command": {Name: "gone", Command: "troupe-no-such-mcp-server", Source: "team/.mcp.json", Env: map[string]string{"GORACE": "atexit_sleep_ms=0"}},
		"not MCP":         {Name: "gone", Command: "/bin/sh", Args: []string{"-c", "echo not json; echo oops >&2"}, Source: "team/.mcp.json", Env: map[string]string{"GORACE": "atexit_sleep_ms=0"}},
	} {
		t.Run(name, func(t *testing.T) {
			pool, err := mcp.NewPool(mcp.Config{Servers: []agenttypes.MCPServer{entry}})
			require.NoError(t, err)
			defer pool.Close(context.Background())
			_, err = pool.Tools(context.Background(), "gone")
			require.ErrorIs(t, err, mcp.ErrStart)
			assert.Contains(t, err.Error(), `MCP server "gone" (declared in team/.mcp.json)`)
		})
	}
}

func TestASecondListingOfAServerSeenBeforeStartsNothing(t *testing.T) {
	pids, cache := pidsFile(t), t.TempDir()
	cfg := mcp.Config{Servers: []agenttypes.MCPServer{stdioEntry(pids, nil)}, CacheDir: cache}
	first, err := mcp.NewPool(cfg)
	require.NoError(t, err)
	_, ok := first.CachedTools("test")
	assert.False(t, ok, "never described")
	want, err := first.Tools(context.Background(), "test")
	require.NoError(t, err)
	require.NoError(t, first.Close(context.Background()))
	require.Len(t, pidsIn(t, pids), 1)

	second, err := mcp.NewPool(cfg)
	require.NoError(t, err)
	defer second.Close(context.Background())
	got, err := second.Tools(context.Background(), "test")
	require.NoError(t, err)
	require.Len(t, got, len(want))
	for i := range want {
		assert.Equal(t, want[i].Spec(), got[i].Spec())
	}
	assert.Len(t, pidsIn(t, pids), 1, "described from the cache")
	out, err := got[0].Call(context.Background(), json.RawMessage(`{"n":3}`))
	if err != nil && errors.Is(err, mcp.ErrInvalidArguments) {
		out, err = got[0].Call(context.Background(), json.RawMessage(`{}`))
	}
	require.NoError(t, err)
	assert.NotEmpty(t, out)
	assert.Len(t, pidsIn(t, pids), 2, "a call starts the server")
}

func TestAnHTTPServerIsReachedWithItsEntrysHeaders(t *testing.T) {
	t.Setenv("TROUPE_MCP_TEST_TOKEN", "tok-456")
	srv := newTestServer(nil)
	var auth atomic.Value
	handler := mcpsdk.NewStreamableHTTPHandler(func(r *http.Request) *mcpsdk.Server {
		auth.Store(r.Header.Get("Authorization"))
		return srv
	}, nil)
	hs := httptest.NewServer(handler)
	defer hs.Close()
	entry := agenttypes.MCPServer{Name: "test", Type: agenttypes.MCPHTTP, URL: hs.URL, Headers: map[string]string{"Authorization": "Bearer ${TROUPE_MCP_TEST_TOKEN}"}}
	pool, err := mcp.NewPool(mcp.Config{Servers: []agenttypes.MCPServer{entry}})
	require.NoError(t, err)
	out, err := toolNamed(t, pool, "echo").Call(context.Background(), json.RawMessage(`{"text":"over http"}`))
	require.NoError(t, err)
	assert.Equal(t, "over http", out)
	assert.Equal(t, "Bearer tok-456", auth.Load())
	require.NoError(t, pool.Close(context.Background()))
}
