package models_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin"
	"github.com/troupe-dev/troupe/builtin/models"
	"github.com/troupe-dev/troupe/builtin/models/providertest"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/sdk/fault"
)

// These tests drive the real manager, with the builtin types and tools,
// through the real langchaingo clients, against a server replaying
// recorded provider exchanges (testdata/providers). Every request the
// clients send is checked against the recording; every response is served
// byte for byte.

var (
	providers = filepath.Join("..", "..", "testdata", "providers")
	shop      = filepath.Join("..", "..", "testdata", "repos", "shop")
)

const (
	openAIKey    = "sk-test-0123456789abcdefghij"
	anthropicKey = "sk-ant-test-0123456789abcdefghij"
)

// wire is one provider under test.
type wire struct {
	provider string
	model    string
}

var wires = []wire{
	{"openai", "openai:gpt-4o-mini"},
	{"anthropic", "anthropic:claude-sonnet-4-5"},
}

// sleeps records the waits the retry policy asked for, without waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return nil
}

func (s *sleeps) waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

type run struct {
	res    manager.Result
	stats  manager.Stats
	events []manager.Event
	srv    *providertest.Server
	sleeps *sleeps
}

type runOpts struct {
	typ      string
	task     string
	attempts int
	config   *models.Config
	stream   models.StreamFunc
	// env and configFn replace the provider's usual environment and config,
	// given the replay server's URL.
	env      func(url string) map[string]string
	configFn func(url string) *models.Config
}

// replay runs one agent against the provider's recording of scenario.
func replay(t *testing.T, w wire, scenario string, o runOpts) run {
	t.Helper()
	srv := providertest.Replay(t, filepath.Join(providers, w.provider, scenario+".txt"))
	env := map[string]string{
		"OPENAI_API_KEY":     openAIKey,
		"OPENAI_BASE_URL":    srv.URL + "/v1",
		"ANTHROPIC_API_KEY":  anthropicKey,
		"ANTHROPIC_BASE_URL": srv.URL,
	}
	if o.env != nil {
		env = o.env(srv.URL)
	}
	cfg := o.config
	if o.configFn != nil {
		cfg = o.configFn(srv.URL)
	}
	sl := &sleeps{}
	resolver := models.Resolver{
		Getenv: func(k string) string { return env[k] },
		Config: cfg,
		Retry:  models.Retry{Attempts: o.attempts, Sleep: sl.sleep},
		Probe:  noOllama,
		Stream: o.stream,
		Logger: quiet,
	}
	reg := agenttypes.NewRegistry()
	require.NoError(t, builtin.Register(reg))
	mgr, err := manager.New(manager.Config{Registry: reg, Models: resolver, DefaultModel: w.model})
	require.NoError(t, err)
	sub := mgr.Subscribe()
	var events []manager.Event
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range sub.C() {
			events = append(events, e)
		}
	}()
	if o.typ == "" {
		o.typ = "explore"
	}
	a, err := mgr.Spawn(context.Background(), manager.SpawnRequest{Type: o.typ, Task: o.task, Dir: shop})
	require.NoError(t, err)
	res, err := a.Wait(context.Background())
	require.NoError(t, err)
	stats := mgr.Stats()
	require.NoError(t, mgr.Close(context.Background()))
	<-done
	return run{res: res, stats: stats, events: events, srv: srv, sleeps: sl}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func noOllama(context.Context, string) ([]string, error) { return nil, context.DeadlineExceeded }

// The answers the recordings end with.
const (
	answerExplore = "The discount is applied when the cart total is computed.\n\n## Findings\n\n" +
		"1. `cart/cart.go:36` — `Total` sums the items and returns `applyDiscount(sum, c.Discount)` (relevance 0.95)\n" +
		"2. `cart/cart.go:40` — `applyDiscount` takes 10% off for WELCOME10 and half for HALFOFF (relevance 0.9)"
	taskExplore = "where is the discount applied to the cart total?"
	taskPlan    = "plan adding a FREESHIP discount code that removes the shipping fee"
)

// usage is what a recording's responses report, summed over its calls.
var recordedUsage = map[string]map[string]manager.Usage{
	"openai": {
		"tool_call":      {InputTokens: 1211 + 1284, OutputTokens: 17 + 71},
		"two_tool_calls": {InputTokens: 1230 + 1968, OutputTokens: 52 + 118},
		"final_answer":   {InputTokens: 1230, OutputTokens: 118},
		"malformed_args": {InputTokens: 1211 + 1302 + 1391, OutputTokens: 15 + 17 + 71},
		"stream":         {InputTokens: 1211 + 1284, OutputTokens: 17 + 71},
	},
	"anthropic": {
		"tool_call":      {InputTokens: 2143 + 2291, OutputTokens: 71 + 94},
		"two_tool_calls": {InputTokens: 2160 + 3012, OutputTokens: 128 + 141},
		"final_answer":   {InputTokens: 2160, OutputTokens: 141},
		"malformed_args": {InputTokens: 2143 + 2251 + 2410, OutputTokens: 58 + 66 + 94},
		"stream":         {InputTokens: 2143 + 2291, OutputTokens: 71 + 94},
	},
}

func TestWireToolCallAndResult(t *testing.T) {
	for _, w := range wires {
		t.Run(w.provider, func(t *testing.T) {
			r := replay(t, w, "tool_call", runOpts{task: taskExplore})
			require.Equal(t, manager.Completed, r.res.State, r.res.Error)
			assert.Equal(t, 2, r.res.Turns)
			assert.Equal(t, 1, r.res.ToolCalls)
			assert.Equal(t, answerExplore, r.res.Output)
			assert.Equal(t, recordedUsage[w.provider]["tool_call"], r.res.Usage, "the provider's own counts, added over calls")
			assert.Equal(t, r.res.Usage, r.stats.Usage)
			f, ok := r.res.Data.(builtin.Findings)
			require.True(t, ok)
			require.Len(t, f.Findings, 2)
			assert.Equal(t, "cart/cart.go", f.Findings[0].Path)
			assert.Equal(t, 36, f.Findings[0].Line)
			assert.Contains(t, kinds(r.events), manager.EventToolCall)
		})
	}
}

func TestWireTwoToolCallsInOneTurn(t *testing.T) {
	for _, w := range wires {
		t.Run(w.provider, func(t *testing.T) {
			r := replay(t, w, "two_tool_calls", runOpts{typ: "plan", task: taskPlan})
			require.Equal(t, manager.Completed, r.res.State, r.res.Error)
			assert.Equal(t, 2, r.res.Turns)
			assert.Equal(t, 2, r.res.ToolCalls)
			assert.Contains(t, r.res.Output, "## Plan")
			assert.Equal(t, recordedUsage[w.provider]["two_tool_calls"], r.res.Usage)

			// The second request carries the whole turn: both calls, then
			// both results in call order.
			reqs := r.srv.Requests()
			require.Len(t, reqs, 2)
			body, err := reqs[1].JSON()
			require.NoError(t, err)
			msgs := body["messages"].([]any)
			switch w.provider {
			case "openai":
				require.Len(t, msgs, 5) // system, user, assistant, tool, tool
				assert.Len(t, msgs[2].(map[string]any)["tool_calls"], 2)
				assert.Equal(t, "tool", msgs[3].(map[string]any)["role"])
				assert.Equal(t, "tool", msgs[4].(map[string]any)["role"])
			case "anthropic":
				require.Len(t, msgs, 3, "user, one assistant turn, one user turn: no turn split")
				assistant := msgs[1].(map[string]any)["content"].([]any)
				require.Len(t, assistant, 3)
				assert.Equal(t, []string{"text", "tool_use", "tool_use"}, blockTypes(assistant))
				results := msgs[2].(map[string]any)["content"].([]any)
				assert.Equal(t, []string{"tool_result", "tool_result"}, blockTypes(results))
				assert.Equal(t, assistant[1].(map[string]any)["id"], results[0].(map[string]any)["tool_use_id"])
				assert.Equal(t, assistant[2].(map[string]any)["id"], results[1].(map[string]any)["tool_use_id"])
			}
		})
	}
}

func TestWireFinalAnswerWithCost(t *testing.T) {
	cfg := &models.Config{Prices: map[string]models.Price{
		"openai:gpt-4o-mini": {Input: 0.15, Output: 0.60},
		"sonnet":             {Input: 3, Output: 15}, // by alias
	}}
	for _, w := range wires {
		t.Run(w.provider, func(t *testing.T) {
			r := replay(t, w, "final_answer", runOpts{typ: "plan", task: taskPlan, config: cfg})
			require.Equal(t, manager.Completed, r.res.State, r.res.Error)
			assert.Equal(t, 1, r.res.Turns)
			assert.Zero(t, r.res.ToolCalls)
			u := recordedUsage[w.provider]["final_answer"]
			price := cfg.Prices["openai:gpt-4o-mini"]
			if w.provider == "anthropic" {
				price = cfg.Prices["sonnet"]
			}
			want := price.Cost(u.InputTokens, u.OutputTokens)
			assert.Equal(t, u.InputTokens, r.res.Usage.InputTokens)
			assert.InDelta(t, want, r.res.Usage.CostUSD, 1e-9, "cost per agent")
			assert.InDelta(t, want, r.stats.Usage.CostUSD, 1e-8, "cost in Stats")
			calls := eventsOf(r.events, manager.EventModelCall)
			require.Len(t, calls, 1)
			assert.InDelta(t, want, calls[0].Usage.CostUSD, 1e-9, "cost in the model_call event that progress lines show")
		})
	}
}

func TestWireRateLimitThenSuccess(t *testing.T) {
	asked := map[string]time.Duration{"openai": 2 * time.Second, "anthropic": 3 * time.Second}
	for _, w := range wires {
		t.Run(w.provider, func(t *testing.T) {
			r := replay(t, w, "rate_limit", runOpts{typ: "plan", task: taskPlan})
			require.Equal(t, manager.Completed, r.res.State, r.res.Error)
			assert.Len(t, r.srv.Requests(), 2)
			assert.Equal(t, []time.Duration{asked[w.provider]}, r.sleeps.waits(), "Retry-After is honoured")
			assert.Equal(t, 1, r.res.Turns, "a retried call is one turn")
		})
	}
}

func TestWireServerErrorGivesUp(t *testing.T) {
	said := map[string]string{"openai": "The server had an error while processing your request", "anthropic": "Overloaded"}
	for _, w := range wires {
		t.Run(w.provider, func(t *testing.T) {
			r := replay(t, w, "server_error", runOpts{typ: "plan", task: taskPlan, attempts: 2})
			assert.Equal(t, manager.Failed, r.res.State)
			assert.Equal(t, manager.ReasonModelError, r.res.Reason)
			require.ErrorIs(t, r.res.Err, fault.ErrUnavailable)
			var e *fault.Error
			require.ErrorAs(t, r.res.Err, &e)
			assert.True(t, e.Retryable)
			assert.Contains(t, r.res.Error, "2 attempts")
			assert.Contains(t, r.res.Error, said[w.provider], "the provider's message is kept")
			waits := r.sleeps.waits()
			require.Len(t, waits, 1)
			assert.True(t, waits[0] >= 500*time.Millisecond && waits[0] <= time.Second, "backoff with jitter: %s", waits[0])
		})
	}
}

func TestWireMalformedToolArguments(t *testing.T) {
	for _, w := range wires {
		t.Run(w.provider, func(t *testing.T) {
			r := replay(t, w, "malformed_args", runOpts{task: taskExplore})
			require.Equal(t, manager.Completed, r.res.State, r.res.Error)
			assert.Equal(t, 3, r.res.Turns)
			assert.Equal(t, answerExplore, r.res.Output)
			assert.Equal(t, recordedUsage[w.provider]["malformed_args"], r.res.Usage)
			results := eventsOf(r.events, manager.EventToolResult)
			require.Len(t, results, 2)
			assert.NotEmpty(t, results[0].Error, "the malformed call failed in the tool, not in the loop")
			assert.Empty(t, results[1].Error)
		})
	}
}

func TestWireDisallowedTool(t *testing.T) {
	for _, w := range wires {
		t.Run(w.provider, func(t *testing.T) {
			r := replay(t, w, "disallowed_tool", runOpts{task: taskExplore})
			require.Equal(t, manager.Completed, r.res.State, r.res.Error)
			assert.Zero(t, r.res.ToolCalls, "a refused call is never run")
			results := eventsOf(r.events, manager.EventToolResult)
			require.Len(t, results, 1)
			assert.Equal(t, "write_file", results[0].Tool)
			assert.Contains(t, results[0].Error, "refused")
			assert.NotContains(t, kinds(r.events), manager.EventToolCall)
		})
	}
}

func TestWireAuthError(t *testing.T) {
	for _, w := range wires {
		t.Run(w.provider, func(t *testing.T) {
			r := replay(t, w, "auth_error", runOpts{typ: "plan", task: taskPlan})
			assert.Equal(t, manager.Failed, r.res.State)
			require.ErrorIs(t, r.res.Err, fault.ErrUnauthenticated)
			assert.Len(t, r.srv.Requests(), 1, "not retried")
			assert.Empty(t, r.sleeps.waits())
			assert.NotContains(t, r.res.Error, openAIKey)
			assert.NotContains(t, r.res.Error, anthropicKey)
			assert.Contains(t, r.res.Error, "API_KEY", "says which variable to check")
		})
	}
}

func TestWireContextTooLong(t *testing.T) {
	for _, w := range wires {
		t.Run(w.provider, func(t *testing.T) {
			r := replay(t, w, "context_length", runOpts{typ: "plan", task: taskPlan})
			assert.Equal(t, manager.Failed, r.res.State)
			require.ErrorIs(t, r.res.Err, fault.ErrContextTooLong)
			assert.Len(t, r.srv.Requests(), 1, "not retried")
		})
	}
}

func TestWireStreaming(t *testing.T) {
	want := map[string]string{
		"openai":    answerExplore,
		"anthropic": "I'll search for where the discount is applied." + answerExplore,
	}
	for _, w := range wires {
		t.Run(w.provider, func(t *testing.T) {
			var (
				mu     sync.Mutex
				text   strings.Builder
				agents = map[string]bool{}
			)
			stream := func(ctx context.Context, chunk string) {
				mu.Lock()
				defer mu.Unlock()
				text.WriteString(chunk)
				agents[agenttypes.EnvFrom(ctx).AgentID] = true
			}
			r := replay(t, w, "stream", runOpts{task: taskExplore, stream: stream})
			require.Equal(t, manager.Completed, r.res.State, r.res.Error)
			assert.Equal(t, answerExplore, r.res.Output)
			assert.Equal(t, 1, r.res.ToolCalls)
			assert.Equal(t, recordedUsage[w.provider]["stream"], r.res.Usage, "usage survives streaming")
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, want[w.provider], text.String(), "the text streamed, without tool-call fragments")
			assert.Equal(t, map[string]bool{r.res.ID: true}, agents, "the stream knows which agent it belongs to")
		})
	}
}

// The OpenAI-compatible endpoints of Ollama and Gemini.
func TestWireCompatibleEndpoints(t *testing.T) {
	for _, tc := range []struct {
		provider, model string
		env             func(url string) map[string]string
		config          func(url string) *models.Config
		usage           manager.Usage
	}{
		{"ollama", "ollama:qwen2.5-coder:7b",
			func(url string) map[string]string { return map[string]string{"OLLAMA_HOST": url} }, nil,
			manager.Usage{InputTokens: 1398 + 1481, OutputTokens: 24 + 88}},
		{"googleai", "googleai:gemini-2.5-flash",
			func(string) map[string]string {
				return map[string]string{"GOOGLE_API_KEY": "AIzaSyTest0123456789abcdefghijklmnopq"}
			},
			func(url string) *models.Config {
				return &models.Config{Providers: models.Providers{GoogleAI: models.ProviderConfig{BaseURL: url + "/v1beta/openai"}}}
			},
			manager.Usage{InputTokens: 1187 + 1271, OutputTokens: 21 + 82}},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			r := replay(t, wire{provider: tc.provider, model: tc.model}, "tool_call", runOpts{task: taskExplore, env: tc.env, config: nil, configFn: tc.config})
			require.Equal(t, manager.Completed, r.res.State, r.res.Error)
			assert.Equal(t, answerExplore, r.res.Output)
			assert.Equal(t, tc.usage, r.res.Usage)
		})
	}
}

func kinds(events []manager.Event) []manager.EventKind {
	var out []manager.EventKind
	for _, e := range events {
		out = append(out, e.Kind)
	}
	return out
}

func eventsOf(events []manager.Event, k manager.EventKind) []manager.Event {
	var out []manager.Event
	for _, e := range events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

func blockTypes(blocks []any) []string {
	var out []string
	for _, b := range blocks {
		out = append(out, b.(map[string]any)["type"].(string))
	}
	return out
}

// Cancelling an agent aborts its call in flight; the run ends as
// cancelled, not as a model error.
func TestWireCancelInFlight(t *testing.T) {
	received := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Reading the body lets the server notice the client going away.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case received <- struct{}{}:
		default:
		}
		<-r.Context().Done()
	}))
	defer srv.Close()
	for _, w := range wires {
		t.Run(w.provider, func(t *testing.T) {
			env := map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "ANTHROPIC_API_KEY": anthropicKey, "ANTHROPIC_BASE_URL": srv.URL}
			reg := agenttypes.NewRegistry()
			require.NoError(t, builtin.Register(reg))
			mgr, err := manager.New(manager.Config{Registry: reg, Models: models.Resolver{Getenv: func(k string) string { return env[k] }, Logger: quiet}, DefaultModel: w.model})
			require.NoError(t, err)
			defer mgr.Close(context.Background())
			a, err := mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "plan", Task: taskPlan, Dir: shop})
			require.NoError(t, err)
			<-received
			a.Cancel()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			res, err := a.Wait(ctx)
			require.NoError(t, err)
			assert.Equal(t, manager.Cancelled, res.State)
			assert.ErrorIs(t, res.Err, context.Canceled)
		})
	}
}

// The model a type names is the one called, over the manager's default;
// the spawn request's model is called over the type's.
func TestWireTypeAndSpawnModelsAreCalled(t *testing.T) {
	oa := providertest.Replay(t, filepath.Join(providers, "openai", "final_answer.txt"))
	an := providertest.Replay(t, filepath.Join(providers, "anthropic", "final_answer.txt"))
	env := map[string]string{
		"OPENAI_API_KEY": openAIKey, "OPENAI_BASE_URL": oa.URL + "/v1",
		"ANTHROPIC_API_KEY": anthropicKey, "ANTHROPIC_BASE_URL": an.URL,
	}
	reg := agenttypes.NewRegistry()
	require.NoError(t, builtin.Register(reg))
	for _, typ := range builtin.Types() {
		if typ.Name == "plan" {
			typ.Name, typ.Model = "planner", "openai:gpt-4o-mini"
			require.NoError(t, reg.RegisterType(typ))
		}
	}
	mgr, err := manager.New(manager.Config{Registry: reg, DefaultModel: "offline",
		Models: models.Resolver{Getenv: func(k string) string { return env[k] }, Probe: noOllama, Logger: quiet}})
	require.NoError(t, err)
	defer mgr.Close(context.Background())

	a, err := mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "planner", Task: taskPlan, Dir: shop})
	require.NoError(t, err)
	res, err := a.Wait(context.Background())
	require.NoError(t, err)
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.Equal(t, "openai:gpt-4o-mini", res.Model)
	assert.Len(t, oa.Requests(), 1, "the type's model was called")

	a, err = mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "planner", Task: taskPlan, Dir: shop, Model: "sonnet"})
	require.NoError(t, err)
	res, err = a.Wait(context.Background())
	require.NoError(t, err)
	require.Equal(t, manager.Completed, res.State, res.Error)
	assert.Equal(t, "sonnet", res.Model)
	assert.Len(t, an.Requests(), 1, "the request's model was called")
	assert.Len(t, oa.Requests(), 1)
}
