package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/troupe-dev/troupe/builtin/process"
	"github.com/troupe-dev/troupe/builtin/script"
	"github.com/troupe-dev/troupe/manager"
)

func TestMain(m *testing.M) {
	// Plugins' keepers and scripts' child processes are this test binary.
	process.ServeIfKeeper()
	// Keepers are this race-built binary: none sleeps a second as it
	// exits, which every Close would wait for.
	os.Setenv("GORACE", "atexit_sleep_ms=0")
	script.ServeIfChild()
	if os.Getenv(testMCPServerEnv) != "" {
		serveTestMCP() // this binary, started as a project's MCP server
		return
	}
	goEnv = startingGoEnv()
	goleak.VerifyTestMain(cleanupAfter{m})
}

// goEnv holds where the go command keeps its build cache and modules,
// and the file of its settings, as they were when the tests started.
// isolate moves HOME and the XDG directories; a build run after it would
// otherwise start from an empty cache and download every module again:
// a minute of a 2-core machine, and the network, which tests must not
// need.
var goEnv []string

func startingGoEnv() []string {
	names := []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOENV"}
	out, err := exec.Command("go", append([]string{"env"}, names...)...).Output()
	if err != nil {
		return nil // the builds then say what is wrong
	}
	values := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(values) != len(names) {
		return nil
	}
	env := make([]string, len(names))
	for i, name := range names {
		env[i] = name + "=" + values[i]
	}
	return env
}

// goCommand is the go command with args, on the caches the tests
// started with, whatever HOME a test has moved to.
func goCommand(args ...string) *exec.Cmd {
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), goEnv...)
	return cmd
}

// cleanupAfter removes what the tests made once for the package (the
// test plugin, the homes of those without their own) after they ran.
type cleanupAfter struct{ m *testing.M }

func (c cleanupAfter) Run() int {
	code := c.m.Run()
	removeTestPlugin()
	_ = os.RemoveAll(noConfigHome)
	_ = os.RemoveAll(noDataHome)
	return code
}

var shop = filepath.Join("..", "..", "testdata", "repos", "shop")

// isolated remembers each test's home, so that the commands one test runs
// share it: what one trusts, the next finds trusted.
var isolated sync.Map // *testing.T → home

// isolate keeps a test away from the user's own agent definitions,
// configuration, plugins and trusted projects.
func isolate(t *testing.T) {
	t.Helper()
	home, ok := isolated.Load(t)
	if !ok {
		home = t.TempDir()
		isolated.Store(t, home)
		t.Cleanup(func() { isolated.Delete(t) })
	}
	t.Setenv("HOME", home.(string))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home.(string), ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home.(string), ".local", "state"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(home.(string), ".local", "share"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home.(string), ".cache"))
}

// shopCopy is a copy of the shop outside any repository, for the agents
// that change files: their workspaces are made from it, never from the
// project's own repository.
func shopCopy(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(shop)))
	return dir
}

// trustRepo trusts the project at repo as it is, as the user would.
func trustRepo(t *testing.T, repo string) {
	t.Helper()
	o := troupe(t, "trust", "--repo", repo)
	require.Equal(t, 0, o.code, o.stderr)
	require.Contains(t, o.stdout, "trusted ")
}

type outcome struct {
	code           int
	stdout, stderr string
}

func troupe(t *testing.T, args ...string) outcome {
	t.Helper()
	return troupeCtx(t, context.Background(), args...)
}

func troupeCtx(t *testing.T, ctx context.Context, args ...string) outcome {
	t.Helper()
	isolate(t)
	t.Setenv("TROUPE_RUNS_DIR", filepath.Join(t.TempDir(), "runs"))
	t.Setenv("TROUPE_MODEL", "")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	var out, errb bytes.Buffer
	code := execute(ctx, args, &out, &errb)
	return outcome{code, out.String(), errb.String()}
}

type jsonResult struct {
	ID        string `json:"id"`
	TraceID   string `json:"trace_id"`
	Type      string `json:"type"`
	Model     string `json:"model"`
	State     string `json:"state"`
	Reason    string `json:"reason"`
	Partial   bool   `json:"partial"`
	Output    string `json:"output"`
	ToolCalls int    `json:"tool_calls"`
	Turns     int    `json:"turns"`
	Usage     struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
	Data struct {
		Findings []struct {
			Path      string  `json:"path"`
			Line      int     `json:"line"`
			Snippet   string  `json:"snippet"`
			Relevance float64 `json:"relevance"`
		} `json:"findings"`
	} `json:"data"`
	DurationMS *int64 `json:"duration_ms"`
	Transcript string `json:"transcript"`
}

func TestRunExploreOffline(t *testing.T) {
	o := troupe(t, "run", "explore", "--repo", shop, "--json", "--progress", "plain", "where is the discount applied to the cart total?")
	require.Equal(t, 0, o.code, o.stderr)
	var res jsonResult
	require.NoError(t, json.Unmarshal([]byte(o.stdout), &res), o.stdout)
	assert.Equal(t, "completed", res.State)
	assert.Equal(t, "done", res.Reason)
	assert.Equal(t, "offline", res.Model)
	assert.NotNil(t, res.DurationMS)
	assert.Positive(t, res.ToolCalls)
	assert.Positive(t, res.Usage.InputTokens)
	assert.Contains(t, res.Output, "not a language model")
	require.NotEmpty(t, res.Data.Findings)
	assert.Equal(t, "cart/cart.go", res.Data.Findings[0].Path, "the best finding is the file that applies discounts")
	assert.Positive(t, res.Data.Findings[0].Line)
	for _, f := range res.Data.Findings {
		assert.False(t, filepath.IsAbs(f.Path), "paths are relative to the repo: %s", f.Path)
	}
	assert.FileExists(t, res.Transcript)

	assert.Contains(t, o.stderr, "▸ explore#", "progress shows the agent starting")
	assert.Contains(t, o.stderr, "→ grep", "progress shows tool calls")
	assert.Contains(t, o.stderr, "✓ explore#")
	assert.NotContains(t, o.stderr, "\x1b[", "no colour when piped")
}

func TestRunPrintsMarkdownAndSummary(t *testing.T) {
	o := troupe(t, "run", "explore", "--repo", shop, "how are card payments retried?")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, "## Findings")
	assert.Contains(t, o.stdout, "payment/charge.go:")
	assert.Contains(t, o.stderr, "model offline")
}

func TestRunProgressJSON(t *testing.T) {
	o := troupe(t, "run", "explore", "--repo", shop, "--progress", "json", "ChargeWithRetry")
	require.Equal(t, 0, o.code, o.stderr)
	kinds := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(o.stderr), "\n") {
		var e map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &e), line)
		kinds[e["kind"].(string)] = true
	}
	for _, k := range []string{"spawned", "state", "model_call", "tool_call", "tool_result", "completed"} {
		assert.True(t, kinds[k], "event %s", k)
	}
}

func TestRunBudgetExhausted(t *testing.T) {
	o := troupe(t, "run", "explore", "--repo", shop, "--json", "--progress", "none", "--max-turns", "1", "where is the discount applied?")
	assert.Equal(t, 1, o.code)
	var res jsonResult
	require.NoError(t, json.Unmarshal([]byte(o.stdout), &res))
	assert.Equal(t, "failed", res.State)
	assert.Equal(t, "budget_turns", res.Reason)
	assert.True(t, res.Partial)
	assert.Equal(t, 1, res.Turns)
}

// TestRunWithASmallBudgetPrintsFindings: the explore agent fits its
// search to a small budget and still prints findings, the right file
// first.
func TestRunWithASmallBudgetPrintsFindings(t *testing.T) {
	for _, budget := range [][]string{{"--max-tool-calls", "3"}, {"--max-turns", "2"}, {"--max-tokens", "2000"}} {
		t.Run(strings.Join(budget, " "), func(t *testing.T) {
			args := append([]string{"run", "explore", "--repo", shop, "--progress", "none"}, budget...)
			o := troupe(t, append(args, "where is the discount applied?")...)
			require.Equal(t, 0, o.code, o.stderr)
			assert.Contains(t, o.stdout, "## Findings")
			assert.Contains(t, o.stdout, "1. `cart/cart.go:", o.stdout)
		})
	}
}

// TestRunWithATokenBudgetTooSmallForOneCall says what budget would do,
// rather than that a budget of which nothing was spent is used up.
func TestRunWithATokenBudgetTooSmallForOneCall(t *testing.T) {
	o := troupe(t, "run", "explore", "--repo", shop, "--progress", "none", "--max-tokens", "100", "where is the discount applied?")
	assert.Equal(t, 1, o.code)
	assert.Contains(t, o.stderr, "token budget of 100 is too small for one model call")
	assert.Regexp(t, `allow at least \d+ tokens`, o.stderr)
}

func TestRunBadInputExitsTwo(t *testing.T) {
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"unknown type", []string{"run", "nosuch", "task"}, `unknown agent type "nosuch"`},
		{"empty task", []string{"run", "explore", "  "}, "task is empty"},
		{"missing task", []string{"run", "explore"}, "missing TASK: troupe run TYPE TASK..."},
		{"missing repo", []string{"run", "explore", "--repo", "/does/not/exist", "task"}, "/does/not/exist"},
		{"zero budget", []string{"run", "explore", "--max-turns", "0", "task"}, "--max-turns 0: a budget must be positive"},
		{"negative budget", []string{"run", "explore", "--max-tokens", "-5", "task"}, "--max-tokens -5"},
		{"zero cost", []string{"run", "explore", "--max-cost", "0", "task"}, "--max-cost 0: a budget must be positive"},
		{"negative cost", []string{"run", "explore", "--max-cost", "-0.5", "task"}, "--max-cost -0.5: a budget must be positive"},
		{"NaN cost", []string{"run", "explore", "--max-cost", "NaN", "task"}, "--max-cost NaN: a budget must be positive"},
		{"infinite cost", []string{"run", "explore", "--max-cost", "+Inf", "task"}, "--max-cost +Inf: a budget must be positive"},
		{"bad duration", []string{"run", "explore", "--max-time", "soon", "task"}, `--max-time "soon" is not a duration`},
		{"zero depth", []string{"run", "explore", "--max-depth", "0", "task"}, "--max-depth 0: delegation depth must be at least 1"},
		{"unknown model", []string{"run", "explore", "--model", "acme:x", "task"}, `unknown provider "acme"`},
		{"missing key", []string{"run", "explore", "--model", "openai:gpt-4o-mini", "task"}, "OPENAI_API_KEY"},
		{"offline refused", []string{"run", "plan", "add a flag"}, "TROUPE_MODEL"},
		{"bad progress", []string{"run", "explore", "--progress", "fancy", "task"}, "auto, plain, json or none"},
		{"unknown flag", []string{"run", "explore", "--nope", "task"}, "unknown flag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolate(t)
			runs := filepath.Join(t.TempDir(), "runs")
			t.Setenv("TROUPE_RUNS_DIR", runs)
			t.Setenv("TROUPE_MODEL", "")
			t.Setenv("OPENAI_API_KEY", "")
			t.Setenv("OPENAI_BASE_URL", "")
			var out, errb bytes.Buffer
			code := execute(context.Background(), tt.args, &out, &errb)
			o := outcome{code, out.String(), errb.String()}
			assert.Equal(t, 2, o.code, "stderr: %s", o.stderr)
			assert.Contains(t, o.stderr, tt.msg)
			assert.Empty(t, o.stdout)
			assert.NoDirExists(t, runs, "nothing was written")
		})
	}
}

func TestRunInterrupted(t *testing.T) {
	// An OpenAI-compatible server that holds every request until the
	// client goes away, so the run is surely in flight when interrupted.
	srv, received := holdingServer(t)
	isolate(t)
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("TROUPE_RUNS_DIR", filepath.Join(t.TempDir(), "runs"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-received
		cancel()
	}()
	var out, errb bytes.Buffer
	code := execute(ctx, []string{"run", "explore", "--repo", shop, "--model", "openai:slow", "--progress", "none", "--json", "anything"}, &out, &errb)
	assert.Equal(t, 130, code, errb.String())
	var res jsonResult
	require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
	assert.Equal(t, "cancelled", res.State)
	assert.Equal(t, "cancelled", res.Reason)
}

func TestTypesListAndShow(t *testing.T) {
	o := troupe(t, "types", "list")
	require.Equal(t, 0, o.code, o.stderr)
	for _, name := range []string{"explore", "plan", "review", "general"} {
		assert.Contains(t, o.stdout, name)
	}
	assert.Contains(t, o.stdout, "builtin")

	o = troupe(t, "types", "list", "--json")
	require.Equal(t, 0, o.code)
	var types []map[string]any
	require.NoError(t, json.Unmarshal([]byte(o.stdout), &types))
	assert.Len(t, types, 4)

	o = troupe(t, "types", "show", "explore")
	require.Equal(t, 0, o.code)
	assert.Contains(t, o.stdout, "tools:       read, grep, symbols, glob, ls, git, note")
	assert.Contains(t, o.stdout, "## Findings")

	o = troupe(t, "types", "show", "nosuch")
	assert.Equal(t, 2, o.code)
	assert.Contains(t, o.stderr, "unknown agent type")
}

func TestToolsListAndCall(t *testing.T) {
	o := troupe(t, "tools", "list", "--type", "explore")
	require.Equal(t, 0, o.code, o.stderr)
	for _, name := range []string{"read", "grep", "symbols", "glob", "ls", "git", "note"} {
		assert.Contains(t, o.stdout, name)
	}

	o = troupe(t, "tools", "call", "symbols", `{"query":"discount","kind":"func"}`, "--repo", shop)
	require.Equal(t, 0, o.code, o.stderr)
	// The name first, then a doc comment, then a body (main's sets the
	// cart's Discount).
	assert.Equal(t, "17 declarations in 4 files; 3 func declarations match: discount 3\n"+
		"cart/cart.go:40-48 func applyDiscount func applyDiscount(cents int64, code string) int64 — applyDiscount takes a percentage off for known discount codes.\n"+
		"cart/cart.go:28-37 func (*Cart).Total func (c *Cart) Total() (int64, error) — Total returns the cart's total in cents after the discount.\n"+
		"main.go:11-20 func main func main()\n"+
		"... left out: 1 test file; name one as path to include it\n", o.stdout)

	o = troupe(t, "tools", "call", "grep", `{"pattern":"func applyDiscount"}`, "--repo", shop)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Equal(t, "cart/cart.go:40:func applyDiscount(cents int64, code string) int64 {\n", o.stdout)

	o = troupe(t, "tools", "call", "read", `{"path":"../../go.mod"}`, "--repo", shop)
	assert.Equal(t, 1, o.code, "the resolver refuses paths outside the repo")
	assert.NotContains(t, o.stdout, "troupe-dev")

	o = troupe(t, "tools", "call", "grep", `{pattern}`, "--repo", shop)
	assert.Equal(t, 2, o.code)
	assert.Contains(t, o.stderr, "not valid JSON")

	o = troupe(t, "tools", "call", "rm", `{}`)
	assert.Equal(t, 2, o.code)
	assert.Contains(t, o.stderr, `unknown tool "rm"`)
}

func TestRunsListAndShow(t *testing.T) {
	isolate(t)
	runs := filepath.Join(t.TempDir(), "runs")
	var out, errb bytes.Buffer
	t.Setenv("TROUPE_RUNS_DIR", runs)
	t.Setenv("TROUPE_MODEL", "")
	code := execute(context.Background(), []string{"run", "explore", "--repo", shop, "--json", "--progress", "none", "ChargeWithRetry"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	var res jsonResult
	require.NoError(t, json.Unmarshal(out.Bytes(), &res))

	out.Reset()
	require.Equal(t, 0, execute(context.Background(), []string{"runs", "list"}, &out, &errb))
	assert.Contains(t, out.String(), res.ID)
	assert.Contains(t, out.String(), "ChargeWithRetry")

	out.Reset()
	require.Equal(t, 0, execute(context.Background(), []string{"runs", "show", res.ID}, &out, &errb))
	assert.Contains(t, out.String(), "→ grep")
	assert.Contains(t, out.String(), "## Findings")

	errb.Reset()
	assert.Equal(t, 2, execute(context.Background(), []string{"runs", "show", "../etc"}, &out, &errb))
	assert.Equal(t, 2, execute(context.Background(), []string{"runs", "show", "missing"}, &out, &errb))
}

// TestBinary builds the real command and runs it as a process, as a user
// would: exit statuses and the split of stdout and stderr are the contract.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "troupe")
	build := goCommand("build", "-o", bin, ".")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())

	env := append(os.Environ(), "TROUPE_RUNS_DIR="+t.TempDir(), "TROUPE_MODEL=", "NO_COLOR=1")
	cmd := exec.Command(bin, "run", "explore", "--repo", shop, "--json", "where is the discount applied?")
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	var res jsonResult
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res))
	assert.Equal(t, "cart/cart.go", res.Data.Findings[0].Path)
	assert.Contains(t, stderr.String(), "→ grep")

	cmd = exec.Command(bin, "run", "plan", "anything")
	cmd.Env = env
	err := cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 2, exit.ExitCode())
}

func TestProgressLineShowsCost(t *testing.T) {
	e := manager.Event{Kind: manager.EventModelCall, Type: "plan", AgentID: "0123456789", Turn: 2,
		Usage: manager.Usage{InputTokens: 100, OutputTokens: 20, CostUSD: 0.0123}}
	assert.Equal(t, "  plan#01234567 turn 2: 100 tokens in, 20 out, $0.0123", progressLine(e, false))
	e.Usage.CostUSD = 0
	assert.Equal(t, "  plan#01234567 turn 2: 100 tokens in, 20 out", progressLine(e, false))
}

func TestProgressLineSaysWhenAnAgentSettles(t *testing.T) {
	e := manager.Event{Kind: manager.EventSettled, Type: "general", AgentID: "0123456789", Usage: manager.Usage{InputTokens: 900, OutputTokens: 40}}
	assert.Equal(t, "  general#01234567 settled: its subagents have ended; 900 tokens in, 40 out in all", progressLine(e, false))
}

// TestStderrIsSharedSafely runs with debug logs on, so loggers on agent
// goroutines and the progress display write to stderr at the same time;
// -race fails this test if those writes are not serialised.
func TestStderrIsSharedSafely(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"the answer is here"},"finish_reason":"stop"}]}`))
	}))
	defer srv.Close()
	isolate(t)
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "k")
	t.Setenv("TROUPE_LOG", "debug")
	t.Setenv("TROUPE_RUNS_DIR", filepath.Join(t.TempDir(), "runs"))
	var out, errb bytes.Buffer
	code := execute(context.Background(), []string{"run", "general", "--repo", shopCopy(t), "--model", "openai:m", "--progress", "plain", "hi"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	assert.Equal(t, "the answer is here\n", out.String())
	assert.Contains(t, errb.String(), "✓ general")
}

// holdingServer is an OpenAI-compatible server that holds every request
// until the client goes away, so a run is surely in flight; received gets
// a value when the first request arrives.
func holdingServer(t *testing.T) (*httptest.Server, <-chan struct{}) {
	t.Helper()
	received := make(chan struct{}, 1)
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case received <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(func() {
		close(stop)
		srv.Close()
	})
	return srv, received
}
