package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/builtin/models/providertest"
)

// The homes of configuration and data of the tests that do not make
// their own: nothing is there but what the go command writes. They are
// removed once the tests ran (cleanupAfter).
var (
	noConfigHome = filepath.Join(os.TempDir(), fmt.Sprintf("troupe-test-no-config-%d", os.Getpid()))
	noDataHome   = filepath.Join(os.TempDir(), fmt.Sprintf("troupe-test-no-data-%d", os.Getpid()))
)

// Every test of this package runs away from the developer's own model
// setup: no user config file, no Ollama probe reaching a real server, no
// Google key. Tests that want one of these set it themselves.
func init() {
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // a port on 127.0.0.1 where nothing listens
	for k, v := range map[string]string{
		"XDG_CONFIG_HOME": noConfigHome,
		"OLLAMA_HOST":     closed.URL,
		"GOOGLE_API_KEY":  "",
		"GEMINI_API_KEY":  "",
		// No plugins but the tests' own.
		"XDG_DATA_HOME":      noDataHome,
		"TROUPE_PLUGIN_PATH": "",
	} {
		os.Setenv(k, v)
	}
}

var providers = filepath.Join("..", "..", "testdata", "providers")

// runWith runs the command with env set (on top of the usual test
// isolation) and a config file, when config is not empty.
func runWith(t *testing.T, env map[string]string, config string, args ...string) outcome {
	t.Helper()
	t.Setenv("TROUPE_RUNS_DIR", filepath.Join(t.TempDir(), "runs"))
	for _, k := range []string{"TROUPE_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"} {
		t.Setenv(k, "")
	}
	isolate(t)
	xdg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", xdg)
	if config != "" {
		require.NoError(t, os.MkdirAll(filepath.Join(xdg, "troupe"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(xdg, "troupe", "config.yaml"), []byte(config), 0o600))
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	var out, errb bytes.Buffer
	code := execute(context.Background(), args, &out, &errb)
	return outcome{code, out.String(), errb.String()}
}

const taskPlan = "plan adding a FREESHIP discount code that removes the shipping fee"

type usageJSON struct {
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

func TestRunPlanAgainstAnOpenAICompatibleServer(t *testing.T) {
	srv := providertest.Replay(t, filepath.Join(providers, "openai-compatible", "plan.txt"))
	o := runWith(t, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"},
		"prices:\n  openai:some-model: {input: 0.50, output: 1.50}\n",
		"run", "plan", "--repo", shop, "--model", "openai:some-model", "--json", "--progress", "none", taskPlan)
	require.Equal(t, 0, o.code, o.stderr)
	var res struct {
		Model     string    `json:"model"`
		State     string    `json:"state"`
		Output    string    `json:"output"`
		ToolCalls int       `json:"tool_calls"`
		Turns     int       `json:"turns"`
		Usage     usageJSON `json:"usage"`
	}
	require.NoError(t, json.Unmarshal([]byte(o.stdout), &res), o.stdout)
	assert.Equal(t, "completed", res.State)
	assert.Equal(t, "openai:some-model", res.Model)
	assert.Contains(t, res.Output, "## Plan")
	assert.Equal(t, 1, res.ToolCalls)
	assert.Equal(t, 2, res.Turns)
	assert.Equal(t, usageJSON{InputTokens: 1402 + 1497, OutputTokens: 29 + 155,
		CostUSD: (float64(1402+1497)*0.50 + float64(29+155)*1.50) / 1e6}, res.Usage, "usage and cost per agent in --json")
}

func TestRunShowsModelUsageAndCostOnStderr(t *testing.T) {
	srv := providertest.Replay(t, filepath.Join(providers, "openai-compatible", "plan.txt"))
	o := runWith(t, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"},
		"model: local\naliases:\n  local: openai:some-model\nprices:\n  local: {input: 0.50, output: 1.50}\n",
		"run", "plan", "--repo", shop, "--progress", "plain", taskPlan)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, "## Plan")
	lines := strings.Split(o.stderr, "\n")
	assert.True(t, strings.HasPrefix(lines[0], "using model local = openai:some-model (model: in "), "said first: %s", lines[0])
	assert.Contains(t, lines[0], filepath.Join("troupe", "config.yaml"))
	assert.Contains(t, o.stderr, "turn 1: 1402 tokens in, 29 out, $0.0007", "progress lines show usage and cost")
	assert.Contains(t, o.stderr, "turn 2: 1497 tokens in, 155 out, $0.0010")
	assert.Contains(t, o.stderr, "2899 tokens in / 184 out, $0.0017 · model local", "the summary shows the totals")
}

func TestRunPlanWithNoModelConfiguredExitsTwo(t *testing.T) {
	o := runWith(t, nil, "", "run", "plan", "--repo", shop, taskPlan)
	assert.Equal(t, 2, o.code, o.stderr)
	assert.Empty(t, o.stdout)
	for _, s := range []string{"needs a language model", "TROUPE_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY",
		"OPENAI_BASE_URL", "OLLAMA_HOST", filepath.Join("troupe", "config.yaml"), filepath.Join(".troupe", "config.yaml")} {
		assert.Contains(t, o.stderr, s)
	}
	assert.NotContains(t, o.stderr, "using model", "no announcement for a run that cannot start")
}

func TestRunExploreFallsBackToOfflineAndSaysSo(t *testing.T) {
	o := runWith(t, nil, "", "run", "explore", "--repo", shop, "--progress", "plain", "ChargeWithRetry")
	require.Equal(t, 0, o.code, o.stderr)
	assert.True(t, strings.HasPrefix(o.stderr, "using model offline (retrieval, not a language model: no TROUPE_MODEL"), o.stderr)
	assert.Contains(t, o.stdout, "not a language model")
}

func TestRunDefaultsToARunningOllama(t *testing.T) {
	exchanges, err := providertest.ParseFile(filepath.Join(providers, "ollama", "tool_call.txt"))
	require.NoError(t, err)
	tags := providertest.Exchange{
		Request:  providertest.Request{Method: http.MethodGet, Path: "/api/tags"},
		Response: providertest.Response{Status: 200, Header: http.Header{"Content-Type": {"application/json; charset=utf-8"}}, Body: []byte(`{"models":[{"name":"qwen2.5-coder:7b","model":"qwen2.5-coder:7b","modified_at":"2025-09-20T08:12:31.5Z","size":4683087332,"digest":"2b0496514337","details":{"family":"qwen2","parameter_size":"7.6B","quantization_level":"Q4_K_M"}}]}`)},
		Source:   "ollama /api/tags",
	}
	srv := providertest.NewServer(t, append([]providertest.Exchange{tags}, exchanges...)...)
	o := runWith(t, map[string]string{"OLLAMA_HOST": srv.URL, "OPENAI_API_KEY": "sk-would-come-next"}, "",
		"run", "explore", "--repo", shop, "--progress", "plain", "where is the discount applied to the cart total?")
	require.Equal(t, 0, o.code, o.stderr)
	assert.True(t, strings.HasPrefix(o.stderr, "using model ollama:qwen2.5-coder:7b (Ollama is running at "+srv.URL+")"), o.stderr)
	assert.Contains(t, o.stdout, "`cart/cart.go:36`")
}

func TestRunBadConfigExitsTwo(t *testing.T) {
	o := runWith(t, nil, "model: mini\nprices:\n  mini: {input: 1, ouput: 2}\n", "run", "explore", "--repo", shop, "x")
	assert.Equal(t, 2, o.code)
	assert.Contains(t, o.stderr, filepath.Join("troupe", "config.yaml")+":3:")
	assert.Contains(t, o.stderr, `unknown key "ouput"`)
	assert.Contains(t, o.stderr, `did you mean "output"?`)
}

func TestRunAnnouncesTROUPE_MODEL(t *testing.T) {
	srv := providertest.Replay(t, filepath.Join(providers, "openai-compatible", "plan.txt"))
	o := runWith(t, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "TROUPE_MODEL": "openai:some-model"}, "",
		"run", "plan", "--repo", shop, "--progress", "plain", taskPlan)
	require.Equal(t, 0, o.code, o.stderr)
	assert.True(t, strings.HasPrefix(o.stderr, "using model openai:some-model (TROUPE_MODEL)\n"), o.stderr)
}

func TestRunProgressJSONStreamsModelText(t *testing.T) {
	srv := providertest.Replay(t, filepath.Join(providers, "openai", "stream.txt"))
	o := runWith(t, map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "OPENAI_API_KEY": "sk-test-0123456789abcdefghij"}, "",
		"run", "explore", "--repo", shop, "--model", "openai:gpt-4o-mini", "--progress", "json", "where is the discount applied to the cart total?")
	require.Equal(t, 0, o.code, o.stderr)
	var streamed strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(o.stderr), "\n") {
		var e struct{ Kind, Text string }
		require.NoError(t, json.Unmarshal([]byte(line), &e), line)
		if e.Kind == "model_delta" {
			streamed.WriteString(e.Text)
		}
	}
	assert.NotEmpty(t, streamed.String(), "text arrives as it is generated")
	assert.Contains(t, o.stdout, strings.TrimSpace(streamed.String())[:20], "the streamed text is the answer")
}
