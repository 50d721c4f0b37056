package models_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/builtin/models"
	"github.com/troupe-dev/troupe/sdk/fault"
)

// With nothing configured, the default is the offline retrieval model,
// which needs no key; a provider's model needs its key.
func ExampleResolver_Resolve() {
	r := models.Resolver{Getenv: func(string) string { return "" }, Probe: noOllama}
	name := r.Default()
	_, err := r.Resolve(context.Background(), name)
	fmt.Println(name, err)
	_, err = r.Resolve(context.Background(), "anthropic:claude-sonnet-4-5")
	fmt.Println(err)
	// Output:
	// offline <nil>
	// cannot resolve model "anthropic:claude-sonnet-4-5": set ANTHROPIC_API_KEY (or api_key under providers.anthropic in the config file)
}

// The default model comes from TROUPE_MODEL, the config file, a running
// Ollama, a present key, or else the offline model, and says which.
func ExampleResolver_Choose() {
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-..."}
	r := models.Resolver{Getenv: func(k string) string { return env[k] }, Probe: noOllama}
	fmt.Println(r.Choose(context.Background()).Describe())

	env = nil
	fmt.Println(r.Choose(context.Background()).Describe())
	// Output:
	// anthropic:claude-sonnet-4-5 (ANTHROPIC_API_KEY is set)
	// offline (retrieval, not a language model: no TROUPE_MODEL, config file model, running Ollama or API key found)
}

// A config file is read strictly: a misspelt key is an error that names the
// file, the line and the likely key.
func ExampleParseConfig() {
	cfg, err := models.ParseConfig("config.yaml", strings.NewReader(`
model: fast
aliases:
  fast: openai:gpt-4o-mini
prices:
  fast: {input: 0.15, output: 0.60}
`))
	if err != nil {
		panic(err)
	}
	r := models.Resolver{Config: cfg}
	fmt.Println(cfg.Model, "→", r.Expand(cfg.Model), cfg.Prices["fast"].Cost(1_000_000, 100_000))

	_, err = models.ParseConfig("config.yaml", strings.NewReader("model: fast\nprovider:\n  openai: {}\n"))
	fmt.Println(err)
	// Output:
	// fast → openai:gpt-4o-mini 0.21
	// bad troupe config: config.yaml:2: unknown key "provider" at the top level; did you mean "providers"? (the keys are: model, aliases, providers, prices, output_limits, retry, max_response_bytes, run, mcp_servers)
}

// quietModel answers without reporting usage, like some local servers.
type quietModel struct{}

func (quietModel) GenerateContent(_ context.Context, _ []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "The discount is applied in cart/cart.go:36."}}}, nil
}

func (m quietModel) Call(ctx context.Context, p string, o ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, p, o...)
}

// Wrap fills in usage the provider did not report (an estimate: four
// characters a token for a model tiktoken does not know) and the cost.
func ExampleWrap() {
	m := models.Wrap(quietModel{}, models.Options{
		Name:  "ollama:qwen2.5-coder",
		Price: &models.Price{Input: 0.10, Output: 0.40},
	})
	resp, _ := m.GenerateContent(context.Background(), []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeHuman, "where is the discount applied?"),
	})
	info := resp.Choices[0].GenerationInfo
	fmt.Println(info["InputTokens"], info["OutputTokens"], info["TokensEstimated"])
	fmt.Printf("$%.7f\n", info["CostUSD"])
	// Output:
	// 15 11 true
	// $0.0000059
}

// A failed call is a *fault.Error: errors.Is tells its class, Retryable
// whether to try again, and its message keeps the provider's words without
// the key and says what to do.
func ExampleWrap_failure() {
	key := "sk-proj-abcdefghijklmnopqrstuvwxyz"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided: ` + key + `","type":"invalid_request_error","code":"invalid_api_key"}}`))
	}))
	defer srv.Close()
	env := map[string]string{"OPENAI_API_KEY": key, "OPENAI_BASE_URL": srv.URL + "/v1"}
	r := models.Resolver{Getenv: func(k string) string { return env[k] }, Probe: noOllama}
	m, err := r.Resolve(context.Background(), "openai:gpt-4o-mini")
	if err != nil {
		panic(err)
	}
	_, err = m.GenerateContent(context.Background(), []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")})
	var e *fault.Error
	fmt.Println(errors.As(err, &e), e.Code, e.Retryable, errors.Is(err, fault.ErrUnauthenticated))
	fmt.Println(err)
	// Output:
	// true unauthenticated false true
	// openai: authentication failed (HTTP 401): Incorrect API key provided: [redacted] — check OPENAI_API_KEY (or api_key under providers.openai in the config file)
}

// streamingModel streams its answer in two pieces when asked to.
type streamingModel struct{}

func (streamingModel) GenerateContent(ctx context.Context, _ []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	var o llms.CallOptions
	for _, opt := range options {
		opt(&o)
	}
	if o.StreamingFunc != nil {
		_ = o.StreamingFunc(ctx, []byte("Hello, "))
		_ = o.StreamingFunc(ctx, []byte("world."))
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "Hello, world."}}}, nil
}

func (m streamingModel) Call(ctx context.Context, p string, o ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, p, o...)
}

// WithStream hands the text to a function as it arrives; the call still
// returns the whole answer.
func ExampleWithStream() {
	m := models.Wrap(streamingModel{}, models.Options{Name: "openai:gpt-4o-mini"})
	ctx := models.WithStream(context.Background(), func(_ context.Context, text string) {
		fmt.Printf("%q\n", text)
	})
	resp, _ := m.GenerateContent(ctx, nil)
	fmt.Println(resp.Choices[0].Content)
	// Output:
	// "Hello, "
	// "world."
	// Hello, world.
}
