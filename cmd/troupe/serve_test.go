package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// servedEnv is the environment of a troupe mcp serve started as its own
// process: the test's isolated home, its runs directory and no key.
func servedEnv(t *testing.T, extra ...string) []string {
	t.Helper()
	troupeBinary(t) // built before isolate moves the build cache away
	isolate(t)
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasSuffix(name, "_API_KEY") || strings.HasPrefix(name, "TROUPE_") || strings.HasPrefix(name, "OPENAI_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, append([]string{"TROUPE_RUNS_DIR=" + filepath.Join(t.TempDir(), "runs")}, extra...)...)
}

// serveProcess starts troupe mcp serve ARGS as its own process and
// connects the MCP SDK's client to it over its stdin and stdout.
func serveProcess(t *testing.T, env []string, args ...string) *mcpsdk.ClientSession {
	t.Helper()
	cmd := exec.Command(troupeBinary(t), append([]string{"mcp", "serve"}, args...)...)
	cmd.Env = env
	var stderr syncBuffer
	cmd.Stderr = &stderr
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "sdk-client", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := client.Connect(ctx, &mcpsdk.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, stderr.String())
	t.Cleanup(func() {
		require.NoError(t, cs.Close(), "closing the session ends troupe cleanly; stderr:\n%s", stderr.String())
		assert.NotNil(t, cmd.ProcessState, "troupe exited")
		if cmd.ProcessState != nil {
			assert.Equal(t, 0, cmd.ProcessState.ExitCode(), stderr.String())
		}
	})
	return cs
}

func callText(res *mcpsdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcpsdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// servedResult is the structured content of a served call: the run's
// result, as run --json prints it.
func servedResult(t *testing.T, res *mcpsdk.CallToolResult) jsonResult {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var r jsonResult
	require.NoError(t, json.Unmarshal(b, &r), string(b))
	return r
}

// The MCP SDK's client, in this process, drives troupe mcp serve in
// another: it lists the types as tools, calls explore on a repository
// with the offline model and gets its findings, and reads the run back as
// a resource.
func TestServeOverStdioToTheSDKClientInAnotherProcess(t *testing.T) {
	cs := serveProcess(t, servedEnv(t), "--repo", shop)
	ctx := context.Background()

	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	assert.Equal(t, []string{"explore", "general", "plan", "review"}, names)

	res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "explore", Arguments: map[string]any{"task": "where is the discount applied?"}})
	require.NoError(t, err)
	require.False(t, res.IsError, callText(res))
	r := servedResult(t, res)
	assert.Equal(t, "completed", r.State)
	assert.Equal(t, "offline", r.Model)
	require.NotEmpty(t, r.Data.Findings, callText(res))
	assert.Equal(t, "cart/cart.go", r.Data.Findings[0].Path)
	assert.Contains(t, callText(res), "cart/cart.go", "the report names what it found")

	rec, err := cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: "troupe://runs/" + r.ID})
	require.NoError(t, err)
	assert.Contains(t, rec.Contents[0].Text, `"state": "completed"`)
	list, err := cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: "troupe://runs"})
	require.NoError(t, err)
	assert.Contains(t, list.Contents[0].Text, r.ID)
}

// releasingServer is an OpenAI-compatible server that holds every request
// until the client goes away: received gets a value when a request
// arrives, released when its client gave up on it.
func releasingServer(t *testing.T) (srv *httptest.Server, received, released <-chan struct{}) {
	t.Helper()
	recv, rel, stop := make(chan struct{}, 16), make(chan struct{}, 16), make(chan struct{})
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The body read whole, the server notices the client leave.
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
		recv <- struct{}{}
		select {
		case <-r.Context().Done():
			rel <- struct{}{}
		case <-stop:
		}
	}))
	t.Cleanup(func() {
		close(stop)
		srv.Close()
	})
	return srv, recv, rel
}

// A client that cancels its call cancels the agent: its model call is
// abandoned, and the run's record says it was cancelled.
func TestCancellingAServedCallCancelsTheAgent(t *testing.T) {
	model, received, released := releasingServer(t)
	cs := serveProcess(t, servedEnv(t, "OPENAI_BASE_URL="+model.URL+"/v1"), "--repo", shop)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "explore", Arguments: map[string]any{"task": "anything", "model": "openai:slow"}})
		errc <- err
	}()
	waitFor(t, received, "the agent's model call")
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	waitFor(t, released, "the model call to be abandoned")

	deadline := time.Now().Add(30 * time.Second)
	for {
		list, err := cs.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: "troupe://runs"})
		require.NoError(t, err)
		if strings.Contains(list.Contents[0].Text, `"state": "cancelled"`) {
			break
		}
		require.True(t, time.Now().Before(deadline), "the run is not recorded cancelled:\n%s", list.Contents[0].Text)
		time.Sleep(20 * time.Millisecond)
	}
}

func waitFor(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(20 * time.Second):
		t.Fatalf("waited 20s for %s", what)
	}
}

// inProcess is troupe mcp serve running in this process over pipes.
type inProcess struct {
	cs     *mcpsdk.ClientSession
	stderr *bytes.Buffer
	done   chan int
}

// serveInProcess runs troupe mcp serve ARGS in this process, with the
// test's environment, and connects a client to it.
func serveInProcess(t *testing.T, args ...string) *inProcess {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &inProcess{stderr: &bytes.Buffer{}, done: make(chan int, 1)}
	a := newApp(outW, p.stderr)
	a.stdin = inR
	go func() {
		code := a.execute(context.Background(), append([]string{"mcp", "serve"}, args...))
		_ = outW.Close()
		p.done <- code
	}()
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "sdk-client", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcpsdk.IOTransport{Reader: outR, Writer: inW}, nil)
	require.NoError(t, err)
	p.cs = cs
	return p
}

// stop closes the client and returns troupe's exit status.
func (p *inProcess) stop(t *testing.T) int {
	t.Helper()
	require.NoError(t, p.cs.Close())
	select {
	case code := <-p.done:
		return code
	case <-time.After(time.Minute):
		t.Fatal("troupe mcp serve did not end when its client hung up")
		return -1
	}
}

// Without --yes, delegation is refused to the model, as on a pipe; with
// it, the child runs.
func TestServedAgentsDelegateOnlyWithYes(t *testing.T) {
	for _, yes := range []bool{false, true} {
		t.Run(map[bool]string{false: "without --yes", true: "with --yes"}[yes], func(t *testing.T) {
			chat := newChatServer(t, `CALL delegate {"tasks":[{"label":"a","type":"explore","prompt":"CHILD look"}]}`, "child done", "parent done")
			troupeEnv(t)
			t.Setenv("OPENAI_BASE_URL", chat.URL+"/v1")
			args := []string{"--repo", shop}
			if yes {
				args = append(args, "--yes")
			}
			p := serveInProcess(t, args...)
			res, err := p.cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "explore",
				Arguments: map[string]any{"task": "look around", "model": "openai:m"}})
			require.NoError(t, err)
			require.False(t, res.IsError, callText(res))
			reqs := chat.received()
			told := lastToolMessage(t, reqs[len(reqs)-1])
			if yes {
				assert.Contains(t, told, "child done", "the child ran and reported")
			} else {
				assert.Contains(t, told, needsApproval)
			}
			assert.Equal(t, 0, p.stop(t), p.stderr.String())
		})
	}
}

// troupeEnv is what troupeCtx sets: an isolated home, a runs directory
// and no model configured.
func troupeEnv(t *testing.T) {
	t.Helper()
	isolate(t)
	t.Setenv("TROUPE_RUNS_DIR", filepath.Join(t.TempDir(), "runs"))
	t.Setenv("TROUPE_MODEL", "")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
}

// The budget flags cap what a client asks for.
func TestServeBudgetFlagsCapWhatAClientAsks(t *testing.T) {
	chat := newChatServer(t, `CALL grep {"pattern":"a"}`, `CALL grep {"pattern":"b"}`, `CALL grep {"pattern":"c"}`, "done")
	troupeEnv(t)
	t.Setenv("OPENAI_BASE_URL", chat.URL+"/v1")
	p := serveInProcess(t, "--repo", shop, "--max-turns", "2")
	res, err := p.cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "explore",
		Arguments: map[string]any{"task": "look", "model": "openai:m", "max_turns": 40}})
	require.NoError(t, err)
	r := servedResult(t, res)
	assert.Equal(t, "budget_turns", r.Reason, callText(res))
	assert.Equal(t, 2, r.Turns)
	assert.Equal(t, 0, p.stop(t))
}

// syncBuffer is a bytes.Buffer that says when a pattern shows up in it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var servingURL = regexp.MustCompile(`on (http://127\.0\.0\.1:\d+/mcp)`)

// Over streamable HTTP on a free loopback port: the same tools and calls.
func TestServeOverStreamableHTTP(t *testing.T) {
	troupeEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, []string{"mcp", "serve", "--repo", shop, "--http", ":0", "--types", "explore"}, io.Discard, &stderr)
	}()
	var url string
	require.Eventually(t, func() bool {
		m := servingURL.FindStringSubmatch(stderr.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	}, time.Minute, 10*time.Millisecond, "troupe says where it listens")

	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "sdk-client", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcpsdk.StreamableClientTransport{Endpoint: url}, nil)
	require.NoError(t, err)
	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, tools.Tools, 1, "--types limits what is served")
	assert.Equal(t, "explore", tools.Tools[0].Name)
	res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "explore", Arguments: map[string]any{"task": "how does ChargeWithRetry back off?"}})
	require.NoError(t, err)
	r := servedResult(t, res)
	require.NotEmpty(t, r.Data.Findings, callText(res))
	assert.Equal(t, "payment/charge.go", r.Data.Findings[0].Path)
	require.NoError(t, cs.Close())

	cancel()
	select {
	case code := <-done:
		assert.Equal(t, exitInterrupted, code, stderr.String())
	case <-time.After(time.Minute):
		t.Fatal("troupe mcp serve --http did not stop when interrupted")
	}
}

func TestServeRefusesBadFlagsChangingNothing(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--http", "0.0.0.0:0"}, "listens on loopback only"},
		{[]string{"--http", "192.168.1.5:8765"}, "listens on loopback only"},
		{[]string{"--http", "nonsense:port:x"}, "give an address such as 127.0.0.1:8765"},
		{[]string{"--types", "exlpore"}, `did you mean "explore"`},
		{[]string{"--max-turns", "0"}, "a budget must be positive"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			o := troupe(t, append([]string{"mcp", "serve", "--repo", shop}, tt.args...)...)
			assert.Equal(t, exitUsage, o.code, o.stderr)
			assert.Contains(t, o.stderr, tt.want)
			assert.NoDirExists(t, os.Getenv("TROUPE_RUNS_DIR"), "a refused command writes nothing")
		})
	}
}

// A served type that names a trusted project's MCP server calls its
// tools, like a run of it does.
func TestAServedTypeCallsItsMCPServersTool(t *testing.T) {
	chat := newChatServer(t, `CALL mcp__loud__shout {"text":"hello"}`, "shouted")
	session(t, chat)
	repo := mcpProject(t)
	trustRepo(t, repo)
	p := serveInProcess(t, "--repo", repo, "--types", "crier")
	res, err := p.cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "crier",
		Arguments: map[string]any{"task": "shout hello", "model": "openai:m"}})
	require.NoError(t, err)
	require.False(t, res.IsError, callText(res))
	reqs := chat.received()
	require.Len(t, reqs, 2)
	assert.Equal(t, "SHOUTED: hello", lastToolMessage(t, reqs[1]))
	assert.Equal(t, 0, p.stop(t), p.stderr.String())
}

// In a project not trusted, a type whose MCP server waits for trust is
// left out of what is served, saying so; asked for by name, it is
// refused. Either way the server never starts.
func TestServeLeavesOutATypeWhoseMCPServerIsNotTrusted(t *testing.T) {
	session(t, newChatServer(t))
	repo, starts := mcpProjectCounting(t)

	p := serveInProcess(t, "--repo", repo)
	tools, err := p.cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	assert.NotContains(t, names, "crier")
	assert.Contains(t, names, "explore", "the builtin types are served")
	assert.Equal(t, 0, p.stop(t))
	assert.Contains(t, p.stderr.String(), `not serving crier: MCP server "loud"`)

	o := cmdIn(t, "mcp", "serve", "--repo", repo, "--types", "crier")
	assert.Equal(t, exitUsage, o.code, o.stderr)
	assert.Contains(t, o.stderr, `MCP server "loud"`)
	assert.Contains(t, o.stderr, "troupe trust --repo")
	assert.NoFileExists(t, starts, "the server never started")
}
