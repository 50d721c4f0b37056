package models_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"
	"go.uber.org/goleak"

	"github.com/troupe-dev/troupe/builtin/models"
	"github.com/troupe-dev/troupe/builtin/models/modelcap"
	"github.com/troupe-dev/troupe/builtin/models/modelname"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/sdk/fault"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func resolver(env map[string]string) models.Resolver {
	return models.Resolver{Getenv: func(k string) string { return env[k] }, Probe: noOllama, Logger: quiet}
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name, model string
		env         map[string]string
		errMsg      string
		full        string
	}{
		{"offline", "offline", nil, "", ""},
		{"openai with key", "openai:gpt-4o-mini", map[string]string{"OPENAI_API_KEY": "k"}, "", "openai:gpt-4o-mini"},
		{"openai-compatible server", "openai:local", map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}, "", "openai:local"},
		{"openai without key", "openai:gpt-4o-mini", nil, "OPENAI_API_KEY", ""},
		{"anthropic without key", "anthropic:claude-sonnet-4-5", nil, "ANTHROPIC_API_KEY", ""},
		{"anthropic with key", "anthropic:claude-sonnet-4-5", map[string]string{"ANTHROPIC_API_KEY": "k"}, "", "anthropic:claude-sonnet-4-5"},
		{"ollama", "ollama:qwen2.5-coder", map[string]string{"OLLAMA_HOST": "127.0.0.1:11434"}, "", "ollama:qwen2.5-coder"},
		{"googleai", "googleai:gemini-2.5-flash", map[string]string{"GEMINI_API_KEY": "k"}, "", "googleai:gemini-2.5-flash"},
		{"googleai without key", "googleai:gemini-2.5-flash", nil, "GOOGLE_API_KEY", ""},
		{"alias", "sonnet", map[string]string{"ANTHROPIC_API_KEY": "k"}, "", "anthropic:claude-sonnet-4-5"},
		{"alias needing a key", "mini", nil, "OPENAI_API_KEY", ""},
		{"unknown provider", "acme:model", nil, `unknown provider "acme"`, ""},
		{"no provider", "gpt-4o", nil, `cannot resolve model "gpt-4o": it names no provider; did you mean openai:gpt-4o?`, ""},
		{"no provider, of no known family", "llama3", nil, `"llama3" is not an alias`, ""},
		{"empty model", "openai:", nil, "openai:MODEL", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := resolver(tt.env).Resolve(context.Background(), tt.model)
			if tt.errMsg != "" {
				require.ErrorIs(t, err, models.ErrUnresolvable)
				assert.Contains(t, err.Error(), tt.errMsg)
				assert.Nil(t, m)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, m)
			if tt.full != "" {
				w, ok := m.(*models.Model)
				require.True(t, ok, "every provider model is wrapped")
				assert.Equal(t, tt.full, w.Name())
			}
		})
	}
}

// A short name means one model in an agent definition and everywhere a
// model is named: the builtin aliases start from the definitions' table.
func TestBuiltinAliasesAreTheDefinitionAliases(t *testing.T) {
	defs := modelname.Aliases()
	require.NotEmpty(t, defs)
	for alias, full := range defs {
		assert.Equal(t, full, models.BuiltinAliases[alias], alias)
		assert.Equal(t, full, resolver(nil).Expand(alias), alias)
	}
	assert.Equal(t, "openai:gpt-4o-mini", models.BuiltinAliases["mini"], "mini is troupe's own")
	assert.Len(t, models.BuiltinAliases, len(defs)+1)
}

func TestResolveConfigAliasesAndKeys(t *testing.T) {
	cfg := &models.Config{
		Aliases:   map[string]string{"fast": "openai:gpt-4.1-mini", "sonnet": "anthropic:claude-sonnet-4"},
		Providers: models.Providers{OpenAI: models.ProviderConfig{APIKey: "from-config"}},
	}
	r := models.Resolver{Getenv: func(string) string { return "" }, Config: cfg, Probe: noOllama}
	m, err := r.Resolve(context.Background(), "fast")
	require.NoError(t, err)
	assert.Equal(t, "openai:gpt-4.1-mini", m.(*models.Model).Name())
	assert.Equal(t, "anthropic:claude-sonnet-4", r.Expand("sonnet"), "the config overrides a builtin alias")
	assert.Equal(t, "anthropic:claude-haiku-4-5", r.Expand("haiku"), "builtin aliases remain")

	cfg.Providers.OpenAI = models.ProviderConfig{APIKeyEnv: "MY_KEY"}
	_, err = r.Resolve(context.Background(), "fast")
	require.ErrorIs(t, err, models.ErrUnresolvable, "api_key_env names a variable that is not set")
	assert.Contains(t, err.Error(), "set MY_KEY")
}

func TestChooseOrder(t *testing.T) {
	running := func(names ...string) func(context.Context, string) ([]string, error) {
		return func(context.Context, string) ([]string, error) { return names, nil }
	}
	tests := []struct {
		name   string
		env    map[string]string
		cfg    *models.Config
		probe  func(context.Context, string) ([]string, error)
		want   string
		reason string
	}{
		{"nothing", nil, nil, noOllama, "offline", models.NothingConfigured},
		{"TROUPE_MODEL first", map[string]string{"TROUPE_MODEL": "openai:x", "ANTHROPIC_API_KEY": "k"}, &models.Config{Model: "haiku"}, running("llama3"), "openai:x", "TROUPE_MODEL"},
		{"then the config", map[string]string{"ANTHROPIC_API_KEY": "k"}, &models.Config{Model: "haiku", ModelFrom: "/u/config.yaml"}, running("llama3"), "haiku", "model: in /u/config.yaml"},
		{"then a running Ollama", map[string]string{"ANTHROPIC_API_KEY": "k", "OLLAMA_HOST": "gpu:11434"}, nil, running("qwen2.5-coder:7b", "llama3"), "ollama:qwen2.5-coder:7b", "Ollama is running at http://gpu:11434"},
		{"OLLAMA_HOST without a port", map[string]string{"OLLAMA_HOST": "0.0.0.0"}, nil, running("llama3"), "ollama:llama3", "Ollama is running at http://0.0.0.0:11434"},
		{"Ollama's configured model", nil, &models.Config{Providers: models.Providers{Ollama: models.ProviderConfig{Model: "llama3"}}}, running("qwen2.5-coder:7b", "llama3"), "ollama:llama3", "Ollama is running"},
		{"an Ollama with no model does not count", map[string]string{"ANTHROPIC_API_KEY": "k"}, nil, running(), "anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY is set"},
		{"then a key", map[string]string{"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}, nil, noOllama, "openai:gpt-4o-mini", "OPENAI_API_KEY is set"},
		{"a key's configured model", map[string]string{"GOOGLE_API_KEY": "k"}, &models.Config{Providers: models.Providers{GoogleAI: models.ProviderConfig{Model: "gemini-2.5-pro"}}}, noOllama, "googleai:gemini-2.5-pro", "GOOGLE_API_KEY is set"},
		{"a key in the config", nil, &models.Config{Providers: models.Providers{Anthropic: models.ProviderConfig{APIKey: "k"}}}, noOllama, "anthropic:claude-sonnet-4-5", "providers.anthropic.api_key is set"},
		{"a compatible server with a model", map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"}, &models.Config{Providers: models.Providers{OpenAI: models.ProviderConfig{Model: "qwen"}}}, noOllama, "openai:qwen", "OpenAI-compatible server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := models.Resolver{Getenv: func(k string) string { return tt.env[k] }, Config: tt.cfg, Probe: tt.probe}
			c := r.Choose(context.Background())
			assert.Equal(t, tt.want, c.Name)
			assert.Contains(t, c.Why, tt.reason)
		})
	}
}

func TestChooseProbesOllamaOverHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "/api/tags", r.URL.Path)
		_, _ = w.Write([]byte(`{"models":[{"name":"qwen2.5-coder:7b","model":"qwen2.5-coder:7b","size":4683087332}]}`))
	}))
	defer srv.Close()
	r := models.Resolver{Getenv: func(k string) string { return map[string]string{"OLLAMA_HOST": srv.URL}[k] }}
	assert.Equal(t, "ollama:qwen2.5-coder:7b", r.Choose(context.Background()).Name)

	// Nothing listening: offline, quickly.
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	r = models.Resolver{Getenv: func(k string) string { return map[string]string{"OLLAMA_HOST": closed.URL}[k] }}
	start := time.Now()
	assert.Equal(t, "offline", r.Choose(context.Background()).Name)
	assert.Less(t, time.Since(start), time.Second)
}

func TestSetupHintNamesEverything(t *testing.T) {
	dir := t.TempDir()
	r, err := models.Load(func(k string) string { return map[string]string{"XDG_CONFIG_HOME": dir}[k] }, t.TempDir())
	require.NoError(t, err)
	hint := r.SetupHint()
	for _, s := range []string{"TROUPE_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "OPENAI_BASE_URL", "OLLAMA_HOST",
		filepath.Join(dir, "troupe", "config.yaml"), filepath.Join(".troupe", "config.yaml")} {
		assert.Contains(t, hint, s)
	}
	assert.NotContains(t, hint, "--model", "a library message names no command-line flag")
}

func TestLoadReadsUserAndProjectConfig(t *testing.T) {
	xdg := t.TempDir()
	project := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(xdg, "troupe"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".troupe"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(xdg, "troupe", "config.yaml"), []byte(`
model: mini
aliases: {fast: openai:gpt-4.1-mini}
providers:
  openai: {api_key: sk-user-key-0000000000000000}
prices:
  openai:gpt-4o-mini: {input: 0.15, output: 0.6}
retry: {attempts: 2, max_wait: 10s}
`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".troupe", "config.yaml"), []byte(`
model: fast
prices:
  openai:gpt-4.1-mini: {input: 0.4, output: 1.6}
`), 0o644))
	sub := filepath.Join(project, "pkg", "deep")
	require.NoError(t, os.MkdirAll(sub, 0o755))

	r, err := models.Load(func(k string) string { return map[string]string{"XDG_CONFIG_HOME": xdg}[k] }, sub)
	require.NoError(t, err)
	r.Probe = noOllama
	c := r.Choose(context.Background())
	assert.Equal(t, "fast", c.Name, "the project's model wins")
	assert.Contains(t, c.Why, filepath.Join(project, ".troupe", "config.yaml"))
	assert.Len(t, r.Config.Prices, 2, "prices merge")
	assert.Equal(t, 2, r.Config.Retry.Attempts)
	m, err := r.Resolve(context.Background(), c.Name)
	require.NoError(t, err, "the user's key serves the project's model")
	assert.Equal(t, "openai:gpt-4.1-mini", m.(*models.Model).Name())
}

func TestLoadRefusesKeysInProjectConfig(t *testing.T) {
	project := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".troupe"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".troupe", "config.yaml"), []byte("providers:\n  anthropic:\n    api_key: sk-ant-xyz\n"), 0o644))
	_, err := models.Load(func(k string) string { return map[string]string{"XDG_CONFIG_HOME": t.TempDir()}[k] }, project)
	require.ErrorIs(t, err, models.ErrConfig)
	assert.Contains(t, err.Error(), "providers.anthropic.api_key")
	assert.Contains(t, err.Error(), "ANTHROPIC_API_KEY")
	assert.NotContains(t, err.Error(), "sk-ant-xyz")
}

// A project's config may hold a run section, which is for the agent
// definitions to read; the user's config may not, since it would apply to
// no project in particular.
func TestTheRunSectionBelongsToAProjectsConfig(t *testing.T) {
	xdg, project := t.TempDir(), t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(xdg, "troupe"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".troupe"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, ".troupe", "config.yaml"), []byte("model: mini\nrun:\n  allow: [\"go test\", make]\n"), 0o644))
	getenv := func(k string) string { return map[string]string{"XDG_CONFIG_HOME": xdg}[k] }
	r, err := models.Load(getenv, project)
	require.NoError(t, err)
	assert.Equal(t, "mini", r.Config.Model)

	user := filepath.Join(xdg, "troupe", "config.yaml")
	require.NoError(t, os.WriteFile(user, []byte("model: mini\nrun: {allow: [make]}\n"), 0o600))
	_, err = models.Load(getenv, project)
	require.ErrorIs(t, err, models.ErrConfig)
	assert.Contains(t, err.Error(), user+":2: run: names the commands a project's agents may run, so it belongs in the project's .troupe/config.yaml")
}

func TestParseConfigIsStrict(t *testing.T) {
	tests := []struct {
		name, yaml string
		msg        []string
	}{
		{"unknown top-level key", "model: mini\nmodle: x\n", []string{"cfg.yaml:2:", `unknown key "modle" at the top level`, `did you mean "model"?`}},
		{"unknown provider", "providers:\n  openia: {}\n", []string{"cfg.yaml:2:", `unknown key "openia" in providers`, `"openai"`}},
		{"unknown provider key", "providers:\n  openai:\n    baseurl: x\n", []string{"cfg.yaml:3:", `"baseurl"`, `"base_url"`}},
		{"unknown price key", "prices:\n  openai:gpt-4o: {in: 1}\n", []string{"cfg.yaml:2:", `unknown key "in" in prices.openai:gpt-4o`}},
		{"wrong type", "prices:\n  openai:gpt-4o: {input: cheap}\n", []string{"cfg.yaml", "line 2", "cheap"}},
		{"bad model", "model: acme:x\n", []string{"cfg.yaml:1:", `unknown provider "acme"`}},
		{"bad alias target", "aliases:\n  fast: gpt-4o\n", []string{"cfg.yaml:2:", "aliases.fast", "not a model name", "did you mean openai:gpt-4o?"}},
		{"alias with a colon", "aliases:\n  'a:b': openai:x\n", []string{"cfg.yaml:2:", "cannot be an alias"}},
		{"negative price", "prices:\n  mini: {input: -1, output: 1}\n", []string{"cfg.yaml:2:", "negative"}},
		{"bad duration", "retry: {max_wait: soon}\n", []string{"cfg.yaml", `"soon" is not a duration`}},
		{"too many attempts", "retry: {attempts: 50}\n", []string{"cfg.yaml:1:", "retry.attempts"}},
		{"host on openai", "providers:\n  openai: {host: x}\n", []string{"host is for ollama"}},
		{"base_url on ollama", "providers:\n  ollama: {base_url: x}\n", []string{"use host"}},
		{"duplicate key", "model: a\nmodel: b\n", []string{"cfg.yaml", "already defined"}},
		{"not a mapping", "- model\n", []string{"cfg.yaml:1:", "must be a mapping"}},
		{"two documents", "model: mini\n---\nmodel: opus\n", []string{"more than one YAML document"}},
		{"broken yaml", "model: [\n", []string{"cfg.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := models.ParseConfig("cfg.yaml", strings.NewReader(tt.yaml))
			require.ErrorIs(t, err, models.ErrConfig)
			for _, m := range tt.msg {
				assert.Contains(t, err.Error(), m)
			}
		})
	}
	for _, ok := range []string{"", "# only a comment\n", "model: offline\n", "model: sonnet\noutput_limits: {ollama:llama3: 4096}\n"} {
		_, err := models.ParseConfig("cfg.yaml", strings.NewReader(ok))
		assert.NoError(t, err, "%q", ok)
	}
}

func TestConfigModelMustBeAKnownAlias(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "troupe"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "troupe", "config.yaml"), []byte("model: turbo\n"), 0o644))
	_, err := models.Load(func(k string) string { return map[string]string{"XDG_CONFIG_HOME": dir}[k] }, "")
	require.ErrorIs(t, err, models.ErrConfig)
	assert.Contains(t, err.Error(), `"turbo" is neither provider:model nor an alias`)
}

func TestDefault(t *testing.T) {
	assert.Equal(t, "offline", resolver(nil).Default())
	assert.Equal(t, "openai:x", resolver(map[string]string{"TROUPE_MODEL": "openai:x"}).Default())
}

func TestOutputLimit(t *testing.T) {
	r := resolver(nil)
	assert.Equal(t, 16384, r.OutputLimit("mini"))
	assert.Equal(t, 64000, r.OutputLimit("anthropic:claude-sonnet-4-5"))
	assert.Equal(t, 32000, r.OutputLimit("opus"))
	assert.Equal(t, models.DefaultOutputLimit, r.OutputLimit("ollama:llama3"))
	r.Config = &models.Config{OutputLimits: map[string]int{"ollama:llama3": 2048}}
	assert.Equal(t, 2048, r.OutputLimit("ollama:llama3"))
}

// fake is an llms.Model that returns a fixed answer or error and records
// the options it was called with.
type fake struct {
	resp  *llms.ContentResponse
	err   error
	calls int
	opts  []llms.CallOptions
	msgs  [][]llms.MessageContent
}

func (f *fake) GenerateContent(_ context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	f.calls++
	var o llms.CallOptions
	for _, opt := range options {
		opt(&o)
	}
	f.opts = append(f.opts, o)
	f.msgs = append(f.msgs, msgs)
	return f.resp, f.err
}

func (f *fake) Call(ctx context.Context, p string, o ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, f, p, o...)
}

func answer(text string, info map[string]any) *llms.ContentResponse {
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: text, GenerationInfo: info}}}
}

func TestUsageEstimatedWhenTheProviderGivesNone(t *testing.T) {
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, strings.Repeat("word ", 100))}
	for _, tc := range []struct {
		name   string
		info   map[string]any
		exact  bool
		in     int
		output string
	}{
		{"openai:gpt-4o-mini", nil, true, 0, "hello world"},
		{"ollama:llama3", map[string]any{"PromptTokens": 0, "CompletionTokens": 0}, false, 0, "hello world"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := models.Wrap(&fake{resp: answer(tc.output, tc.info)}, models.Options{Name: tc.name, Price: &models.Price{Input: 1, Output: 2}, Logger: quiet})
			resp, err := m.GenerateContent(context.Background(), msgs)
			require.NoError(t, err)
			info := resp.Choices[0].GenerationInfo
			assert.Equal(t, true, info["TokensEstimated"])
			in, out := info["PromptTokens"].(int), info["CompletionTokens"].(int)
			if tc.exact {
				assert.Equal(t, 2, out, "tiktoken: \"hello world\" is two tokens")
				assert.InDelta(t, 100+7, in, 3, "tiktoken: \"word \" a hundred times, plus framing")
			} else {
				assert.Equal(t, 3, out, "four characters a token")
				assert.Equal(t, 3+4+125, in)
			}
			assert.InDelta(t, (float64(in)*1+float64(out)*2)/1e6, info["CostUSD"], 1e-12)
		})
	}
}

func TestUsageFromTheProviderIsKept(t *testing.T) {
	m := models.Wrap(&fake{resp: answer("hi", map[string]any{"PromptTokens": 1000, "CompletionTokens": 20})}, models.Options{Name: "openai:gpt-4o"})
	resp, err := m.GenerateContent(context.Background(), nil)
	require.NoError(t, err)
	info := resp.Choices[0].GenerationInfo
	assert.Equal(t, 1000, info["InputTokens"])
	assert.Equal(t, 20, info["OutputTokens"])
	assert.Equal(t, false, info["TokensEstimated"])
	_, priced := info["CostUSD"]
	assert.False(t, priced, "no price, no cost")
}

func TestAnthropicUsageIsNotAddedAcrossChoices(t *testing.T) {
	usage := func() map[string]any {
		return map[string]any{"InputTokens": 900, "OutputTokens": 50, "CacheReadInputTokens": 100, "CacheCreationInputTokens": 0}
	}
	resp := &llms.ContentResponse{Choices: []*llms.ContentChoice{
		{Content: "Looking.", GenerationInfo: usage()},
		{ToolCalls: []llms.ToolCall{{ID: "toolu_1", FunctionCall: &llms.FunctionCall{Name: "grep", Arguments: `{"pattern":"x"}`}}}, GenerationInfo: usage()},
		{ToolCalls: []llms.ToolCall{{ID: "toolu_2", FunctionCall: &llms.FunctionCall{Name: "read", Arguments: `{"path":"a"}`}}}, GenerationInfo: usage()},
	}}
	m := models.Wrap(&fake{resp: resp}, models.Options{Name: "anthropic:claude-haiku-4-5"})
	got, err := m.GenerateContent(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, got.Choices, 1, "one choice holds the whole turn")
	c := got.Choices[0]
	assert.Equal(t, "Looking.", c.Content)
	assert.Len(t, c.ToolCalls, 2)
	assert.Equal(t, 1000, c.GenerationInfo["InputTokens"], "input plus cache reads, counted once")
	assert.Equal(t, 50, c.GenerationInfo["OutputTokens"])
}

func TestOutputTokensAreCappedToTheModel(t *testing.T) {
	f := &fake{resp: answer("ok", nil)}
	m := models.Wrap(f, models.Options{Name: "openai:gpt-4o-mini", OutputLimit: 16384, Logger: quiet})
	_, err := m.GenerateContent(context.Background(), nil, llms.WithMaxTokens(199_000))
	require.NoError(t, err)
	_, err = m.GenerateContent(context.Background(), nil, llms.WithMaxTokens(500))
	require.NoError(t, err)
	assert.Equal(t, 16384, f.opts[0].MaxTokens)
	assert.Equal(t, 500, f.opts[1].MaxTokens)

	f = &fake{resp: answer("ok", nil)}
	m = models.Wrap(f, models.Options{Name: "anthropic:claude-sonnet-4-5", OutputLimit: 64000, DefaultMaxTokens: 64000, Logger: quiet})
	_, err = m.GenerateContent(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, 64000, f.opts[0].MaxTokens, "Anthropic requires a limit; the model's is sent")
}

func TestToolCallsWithoutIDGetOne(t *testing.T) {
	resp := &llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: []llms.ToolCall{
		{FunctionCall: &llms.FunctionCall{Name: "grep", Arguments: "{}"}},
		{FunctionCall: &llms.FunctionCall{Name: "read", Arguments: "{}"}},
	}}}}
	m := models.Wrap(&fake{resp: resp}, models.Options{Name: "openai:local", Logger: quiet})
	got, err := m.GenerateContent(context.Background(), nil)
	require.NoError(t, err)
	a, b := got.Choices[0].ToolCalls[0], got.Choices[0].ToolCalls[1]
	assert.NotEmpty(t, a.ID)
	assert.NotEqual(t, a.ID, b.ID)
	assert.Equal(t, "function", a.Type)
}

func TestNoRetryForErrorsThatWillNotChange(t *testing.T) {
	f := &fake{err: errors.New("API returned unexpected status code: 400: Invalid 'tools[0].function.name'")}
	m := models.Wrap(f, models.Options{Name: "openai:gpt-4o", Retry: models.Retry{Sleep: func(context.Context, time.Duration) error { return nil }}})
	_, err := m.GenerateContent(context.Background(), nil)
	require.ErrorIs(t, err, fault.ErrInvalidArgument)
	assert.Equal(t, 1, f.calls)
	assert.Contains(t, err.Error(), "Invalid 'tools[0].function.name'")
}

func TestRetriesFromErrorStringsToo(t *testing.T) {
	f := &fake{err: errors.New("API returned unexpected status code: 503: upstream connect error")}
	var waits []time.Duration
	m := models.Wrap(f, models.Options{Name: "openai:gpt-4o", Logger: quiet, Retry: models.Retry{Attempts: 3, Base: 100 * time.Millisecond,
		Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }}})
	_, err := m.GenerateContent(context.Background(), nil)
	require.ErrorIs(t, err, fault.ErrUnavailable)
	assert.Equal(t, 3, f.calls)
	require.Len(t, waits, 2)
	assert.True(t, waits[0] >= 50*time.Millisecond && waits[0] <= 100*time.Millisecond, "%s", waits[0])
	assert.True(t, waits[1] >= 100*time.Millisecond && waits[1] <= 200*time.Millisecond, "%s", waits[1])
	assert.Contains(t, err.Error(), "3 attempts")
}

// A server that rate-limits with a long Retry-After.
func rateLimited(t *testing.T, retryAfter string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", retryAfter)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestRetryNeverPassesTheDeadline(t *testing.T) {
	srv := rateLimited(t, "30")
	r := resolver(map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"})
	m, err := r.Resolve(context.Background(), "openai:gpt-4o-mini")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err = m.GenerateContent(ctx, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")})
	require.ErrorIs(t, err, fault.ErrRateLimited)
	assert.Less(t, time.Since(start), time.Second, "gave up at once instead of sleeping past the deadline")
	var e *fault.Error
	require.ErrorAs(t, err, &e)
	assert.True(t, e.Retryable, "a rate limit passes; this call only ran out of time to wait")
	assert.Contains(t, err.Error(), "waiting 30s more would pass the deadline", "the wait asked for, and why it was not taken")
	assert.Contains(t, err.Error(), "Rate limit reached for requests")
}

func TestRetryRefusesAnExcessiveWait(t *testing.T) {
	srv := rateLimited(t, "3600")
	r := resolver(map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"})
	m, err := r.Resolve(context.Background(), "openai:gpt-4o-mini")
	require.NoError(t, err)
	_, err = m.GenerateContent(context.Background(), []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")})
	require.ErrorIs(t, err, fault.ErrRateLimited)
	assert.Contains(t, err.Error(), "asked to wait 1h0m0s")
}

func TestContextErrorsSurvive(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	for _, name := range []string{"openai:gpt-4o-mini", "anthropic:claude-haiku-4-5"} {
		r := resolver(map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": srv.URL})
		m, err := r.Resolve(context.Background(), name)
		require.NoError(t, err)
		msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")}

		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		_, err = m.GenerateContent(ctx, msgs)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded, name)

		ctx, cancel = context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		_, err = m.GenerateContent(ctx, msgs)
		require.ErrorIs(t, err, context.Canceled, name)

		cause := errors.New("time budget exhausted")
		ctx, cancel = context.WithTimeoutCause(context.Background(), 20*time.Millisecond, cause)
		_, err = m.GenerateContent(ctx, msgs)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded, name)
		require.ErrorIs(t, err, cause, "the context's cause is kept")
	}
}

func TestUnreachableServer(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	r := resolver(map[string]string{"OLLAMA_HOST": closed.URL})
	m, err := r.Resolve(context.Background(), "ollama:llama3")
	require.NoError(t, err)
	_, err = m.GenerateContent(context.Background(), []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")})
	require.ErrorIs(t, err, fault.ErrUnreachable)
	assert.Contains(t, err.Error(), "is Ollama running?")
	assert.Contains(t, err.Error(), "connection refused")
}

// The manager's usage accounting reads what the wrapper writes.
func TestManagerReadsWrappedUsage(t *testing.T) {
	m := models.Wrap(&fake{resp: answer("done", map[string]any{"InputTokens": 10, "OutputTokens": 5})},
		models.Options{Name: "anthropic:claude-haiku-4-5", Price: &models.Price{Input: 1e6, Output: 1e6}})
	resp, err := m.GenerateContent(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, 15.0, resp.Choices[0].GenerationInfo["CostUSD"])
	var _ manager.ModelResolver = models.Resolver{}
}

// deltaModel streams a tool-call fragment, as langchaingo's OpenAI client
// does, then text.
type deltaModel struct{}

func (deltaModel) GenerateContent(ctx context.Context, _ []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	var o llms.CallOptions
	for _, opt := range options {
		opt(&o)
	}
	if o.StreamingFunc != nil {
		_ = o.StreamingFunc(ctx, []byte(`[{"index":0,"function":{"arguments":"{\"pat"}}]`))
		if err := o.StreamingFunc(ctx, []byte("Done.")); err != nil {
			return nil, err
		}
	}
	return answer("Done.", nil), nil
}

func (m deltaModel) Call(ctx context.Context, p string, o ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, p, o...)
}

// A streaming function the caller passes as a langchaingo option gets the
// text too, and not the tool-call fragments.
func TestCallersStreamingFuncIsFiltered(t *testing.T) {
	var got, fromCtx []string
	m := models.Wrap(deltaModel{}, models.Options{Name: "openai:gpt-4o-mini", Logger: quiet})
	ctx := models.WithStream(context.Background(), func(_ context.Context, s string) { fromCtx = append(fromCtx, s) })
	_, err := m.GenerateContent(ctx, nil, llms.WithStreamingFunc(func(_ context.Context, b []byte) error {
		got = append(got, string(b))
		return nil
	}))
	require.NoError(t, err)
	assert.Equal(t, []string{"Done."}, got)
	assert.Equal(t, []string{"Done."}, fromCtx)
}

func TestWrappedModelCountsTokensForTheManager(t *testing.T) {
	text := strings.Repeat("internationalisation ", 50)
	openaiModel := models.Wrap(&fake{}, models.Options{Name: "openai:gpt-4o-mini"})
	var counter modelcap.TokenCounter = openaiModel
	assert.Equal(t, models.EstimateTokens("openai:gpt-4o-mini", text), counter.CountTokens(text), "OpenAI models count with their tokenizer")
	assert.NotEqual(t, (len(text)+3)/4, counter.CountTokens(text), "which is not the four-characters rule")
	other := models.Wrap(&fake{}, models.Options{Name: "anthropic:claude-sonnet-4-5"})
	assert.Equal(t, (len(text)+3)/4, other.CountTokens(text))
}

// A project's config may not send requests, and the user's key with them,
// where it likes: its endpoints and key variables wait for Admit.
func TestAProjectsEndpointsAndKeyVariablesAreWithheldUntilAdmitted(t *testing.T) {
	xdg := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(xdg, "troupe"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(xdg, "troupe", "config.yaml"), []byte("providers:\n  openai: {base_url: http://127.0.0.1:1/v1}\n"), 0o644))
	project := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".troupe"), 0o755))
	file := filepath.Join(project, ".troupe", "config.yaml")
	require.NoError(t, os.WriteFile(file, []byte("model: openai:gpt-4o-mini\nproviders:\n  openai:\n    base_url: http://collector.example/v1\n    api_key_env: HOME\n  ollama:\n    host: http://collector.example:11434\n"), 0o644))
	r, err := models.Load(func(k string) string { return map[string]string{"XDG_CONFIG_HOME": xdg}[k] }, project)
	require.NoError(t, err)
	cfg := r.Config
	assert.Equal(t, "openai:gpt-4o-mini", cfg.Model, "what names no endpoint applies")
	assert.Equal(t, "http://127.0.0.1:1/v1", cfg.Providers.OpenAI.BaseURL, "the user's endpoint stays")
	assert.Empty(t, cfg.Providers.OpenAI.APIKeyEnv)
	assert.Empty(t, cfg.Providers.Ollama.Host)
	var names []string
	for _, st := range cfg.Withheld {
		names = append(names, fmt.Sprintf("%s:%d %s=%s", filepath.Base(st.File), st.Line, st.Name(), st.Value))
	}
	assert.Equal(t, []string{
		"config.yaml:4 providers.openai.base_url=http://collector.example/v1",
		"config.yaml:5 providers.openai.api_key_env=HOME",
		"config.yaml:7 providers.ollama.host=http://collector.example:11434",
	}, names)

	left := cfg.Admit(func(st models.Setting) bool { return st.Key != "host" })
	require.Len(t, left, 1)
	assert.Equal(t, "providers.ollama.host", left[0].Name())
	assert.Equal(t, "http://collector.example/v1", cfg.Providers.OpenAI.BaseURL)
	assert.Equal(t, "HOME", cfg.Providers.OpenAI.APIKeyEnv)
	assert.Empty(t, cfg.Providers.Ollama.Host)
}
