package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/troupe-dev/troupe/builtin/models/modelname"
	"github.com/troupe-dev/troupe/builtin/offline"
)

// Offline is the name of the embedded retrieval model.
const Offline = modelname.Offline

// ErrUnresolvable is wrapped by every resolution error.
var ErrUnresolvable = errors.New("cannot resolve model")

// The providers a model name may start with.
var providerNames = []string{"openai", "anthropic", "ollama", "googleai"}

// keyEnv is each provider's usual key variable.
var keyEnv = map[string]string{
	"openai":    "OPENAI_API_KEY",
	"anthropic": "ANTHROPIC_API_KEY",
	"googleai":  "GOOGLE_API_KEY",
}

// Default endpoints.
const (
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL = "https://api.anthropic.com/v1"
	DefaultGoogleAIBaseURL  = "https://generativelanguage.googleapis.com/v1beta/openai"
	DefaultOllamaHost       = "http://127.0.0.1:11434"
)

// the model picked when a provider's key is what chooses the default
var defaultProviderModel = map[string]string{
	"openai":    "gpt-4o-mini",
	"anthropic": "claude-sonnet-4-5",
	"googleai":  "gemini-2.5-flash",
}

// ProbeTimeout bounds the check for a running Ollama when choosing the
// default model.
const ProbeTimeout = 300 * time.Millisecond

const howTo = "name a model as offline, an alias (sonnet, haiku, opus, mini), or openai:MODEL, anthropic:MODEL, ollama:MODEL or googleai:MODEL"

// Resolver turns model names into models. The zero value reads the process
// environment and no config file; Load also reads the config files.
type Resolver struct {
	// Getenv reads environment variables; os.Getenv when nil.
	Getenv func(string) string
	// Config is the config files' content; nil is an empty config.
	Config *Config
	// Probe lists the models of the Ollama server at host, for the
	// default model; nil probes over HTTP within ProbeTimeout.
	Probe func(ctx context.Context, host string) ([]string, error)
	// Transport carries the providers' HTTP requests;
	// http.DefaultTransport when nil.
	Transport http.RoundTripper
	// Retry overrides the retry policy's fields that are set (the config
	// file's retry section sets Attempts and MaxWait).
	Retry Retry
	// Stream, when set, streams every call of every model it resolves
	// (see WithStream for one call).
	Stream StreamFunc
	// Logger receives retries; slog.Default() when nil.
	Logger *slog.Logger
	// MaxResponseBytes caps what is read of one provider response,
	// streamed or not; a longer one fails the call with
	// ErrResponseTooLarge. 0 takes the config's max_response_bytes, else
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64

	userFile, projectFile string
}

// Load returns a Resolver that reads the environment through getenv
// (os.Getenv when nil) and the config files for a project at dir (see
// ConfigFiles); dir "" reads only the user's.
func Load(getenv func(string) string, dir string) (Resolver, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	user, project := ConfigFiles(getenv, dir)
	cfg, err := LoadConfig(user, project)
	if err != nil {
		return Resolver{}, err
	}
	return Resolver{Getenv: getenv, Config: cfg, userFile: user, projectFile: project}, nil
}

func (r Resolver) env(k string) string {
	if r.Getenv != nil {
		return strings.TrimSpace(r.Getenv(k))
	}
	return strings.TrimSpace(os.Getenv(k))
}

func (r Resolver) cfg() *Config {
	if r.Config != nil {
		return r.Config
	}
	return &Config{}
}

// Choice is a default model and why it was chosen.
type Choice struct {
	// Name is the model name, as Resolve takes it.
	Name string
	// Why says what chose it: "TROUPE_MODEL", "model: in FILE", "Ollama
	// is running at HOST", "OPENAI_API_KEY is set", or that nothing is
	// configured.
	Why string
	// Full is the provider:model an alias stands for, when Name is one.
	Full string
}

// Offline reports whether the choice is the offline retrieval model.
func (c Choice) Offline() bool { return c.Name == Offline }

// Describe is a line for the user: "anthropic:claude-sonnet-4-5
// (ANTHROPIC_API_KEY is set)", or for the offline model, what it is.
func (c Choice) Describe() string {
	if c.Offline() {
		return fmt.Sprintf("%s (retrieval, not a language model: %s)", c.Name, c.Why)
	}
	if c.Full != "" && c.Full != c.Name {
		return fmt.Sprintf("%s = %s (%s)", c.Name, c.Full, c.Why)
	}
	return fmt.Sprintf("%s (%s)", c.Name, c.Why)
}

// NothingConfigured is the Why of the offline model chosen for lack of
// anything else.
const NothingConfigured = "no TROUPE_MODEL, config file model, running Ollama or API key found"

// Choose picks the default model: $TROUPE_MODEL; else the config files'
// model; else a running Ollama (its providers.ollama.model, or the first
// model it lists); else the first provider with a key (OpenAI, Anthropic,
// Google), with its providers.NAME.model or a default; else the offline
// model. Only the Ollama check touches the network, for at most
// ProbeTimeout.
func (r Resolver) Choose(ctx context.Context) Choice {
	c := r.choose(ctx)
	if full := r.Expand(c.Name); full != c.Name {
		c.Full = full
	}
	return c
}

func (r Resolver) choose(ctx context.Context) Choice {
	if m := r.env("TROUPE_MODEL"); m != "" {
		return Choice{Name: m, Why: "TROUPE_MODEL"}
	}
	cfg := r.cfg()
	if cfg.Model != "" {
		return Choice{Name: cfg.Model, Why: "model: in " + orDefault(cfg.ModelFrom, "the config")}
	}
	if host := r.ollamaHost(); host != "" {
		pctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
		names, err := r.probe(pctx, host)
		cancel()
		if err == nil && len(names) > 0 {
			m := cfg.Providers.Ollama.Model
			if m == "" {
				m = names[0]
			}
			return Choice{Name: "ollama:" + strings.TrimPrefix(m, "ollama:"), Why: "Ollama is running at " + host}
		}
	}
	for _, p := range []string{"openai", "anthropic", "googleai"} {
		key, from := r.key(p)
		if key == "" {
			continue
		}
		m := cfg.Providers.get(p).Model
		if m == "" {
			m = defaultProviderModel[p]
		}
		return Choice{Name: p + ":" + strings.TrimPrefix(m, p+":"), Why: from + " is set"}
	}
	if base := r.openAIBase(); base != "" && cfg.Providers.OpenAI.Model != "" {
		return Choice{Name: "openai:" + cfg.Providers.OpenAI.Model, Why: "an OpenAI-compatible server is configured at " + base}
	}
	return Choice{Name: Offline, Why: NothingConfigured}
}

// Default is Choose(context.Background()).Name.
func (r Resolver) Default() string { return r.Choose(context.Background()).Name }

// SetupHint says every way to configure a language model, naming the
// environment variables and the config files.
func (r Resolver) SetupHint() string {
	user, project := r.userFile, r.projectFile
	if user == "" {
		user, _ = ConfigFiles(r.Getenv, "")
	}
	files := "$XDG_CONFIG_HOME/troupe/config.yaml"
	if user != "" {
		files = user
	}
	if project != "" {
		files += " or " + project
	}
	return "no language model is configured. Set TROUPE_MODEL=provider:model; or an API key: " +
		"OPENAI_API_KEY, ANTHROPIC_API_KEY or GOOGLE_API_KEY; or OPENAI_BASE_URL for an OpenAI-compatible server; " +
		"or start Ollama (OLLAMA_HOST, default " + DefaultOllamaHost + "); or write `model: provider:model` in " + files
}

// key returns a provider's key and where it came from.
func (r Resolver) key(provider string) (key, from string) {
	p := r.cfg().Providers.get(provider)
	if p == nil || provider == "ollama" {
		return "", ""
	}
	if p.APIKeyEnv != "" {
		return r.env(p.APIKeyEnv), p.APIKeyEnv
	}
	vars := []string{keyEnv[provider]}
	if provider == "googleai" {
		vars = append(vars, "GEMINI_API_KEY")
	}
	for _, v := range vars {
		if k := r.env(v); k != "" {
			return k, v
		}
	}
	if p.APIKey != "" {
		return p.APIKey, "providers." + provider + ".api_key"
	}
	return "", ""
}

func (r Resolver) openAIBase() string {
	if b := r.env("OPENAI_BASE_URL"); b != "" {
		return b
	}
	return r.cfg().Providers.OpenAI.BaseURL
}

func (r Resolver) ollamaHost() string {
	h := r.env("OLLAMA_HOST")
	if h == "" {
		h = r.cfg().Providers.Ollama.Host
	}
	if h == "" {
		h = DefaultOllamaHost
	}
	if !strings.Contains(h, "://") {
		h = "http://" + h
	}
	// As Ollama's own client: a host without a port is on 11434.
	if u, err := url.Parse(h); err == nil && u.Port() == "" && u.Scheme == "http" && u.Host != "" {
		u.Host += ":11434"
		h = u.String()
	}
	return strings.TrimRight(h, "/")
}

// keyVar names the variable a provider's key is read from.
func (r Resolver) keyVar(provider string) string {
	if p := r.cfg().Providers.get(provider); p != nil && p.APIKeyEnv != "" {
		return p.APIKeyEnv
	}
	return keyEnv[provider]
}

func (r Resolver) maxResponseBytes() int64 {
	if r.MaxResponseBytes > 0 {
		return r.MaxResponseBytes
	}
	if n := r.cfg().MaxResponseBytes; n > 0 {
		return n
	}
	return DefaultMaxResponseBytes
}

func (r Resolver) transport() http.RoundTripper {
	if r.Transport != nil {
		return r.Transport
	}
	return http.DefaultTransport
}

func (r Resolver) probe(ctx context.Context, host string) ([]string, error) {
	if r.Probe != nil {
		return r.Probe(ctx, host)
	}
	return ProbeOllama(ctx, &http.Client{Transport: r.transport()}, host)
}

// ProbeOllama lists the models of the Ollama server at host (GET
// /api/tags), most recently used first.
func ProbeOllama(ctx context.Context, client *http.Client, host string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(host, "/")+"/api/tags", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("ollama at %s: HTTP %d", host, resp.StatusCode)
	}
	var tags struct {
		Models []struct {
			Name string `json:"name"`
		} `json:"models"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&tags); err != nil {
		return nil, fmt.Errorf("ollama at %s: %w", host, err)
	}
	names := make([]string, 0, len(tags.Models))
	for _, m := range tags.Models {
		if m.Name != "" {
			names = append(names, m.Name)
		}
	}
	return names, nil
}

// Expand returns the full name an alias stands for, or name itself.
func (r Resolver) Expand(name string) string {
	name = strings.TrimSpace(name)
	if name == Offline || strings.Contains(name, ":") {
		return name
	}
	if full, ok := r.cfg().aliases()[name]; ok {
		return full
	}
	return name
}

// Resolve returns the model a name stands for: "offline", an alias, or
// "provider:model". Every model but the offline one is wrapped (see
// Model). It makes no network call.
func (r Resolver) Resolve(_ context.Context, name string) (llms.Model, error) {
	name = strings.TrimSpace(name)
	if name == Offline {
		return offline.New(), nil
	}
	full, provider, model, err := r.split(name)
	if err != nil {
		return nil, err
	}
	o := r.options(full)
	var inner llms.Model
	switch provider {
	case "openai":
		inner, err = r.openAI(name, model, &o)
	case "anthropic":
		inner, err = r.anthropic(name, model, &o)
	case "ollama":
		inner, err = r.ollama(name, model, &o)
	case "googleai":
		inner, err = r.googleAI(name, model, &o)
	}
	if err != nil {
		return nil, err
	}
	return Wrap(inner, o), nil
}

// split expands an alias and checks that what it stands for is
// provider:model with a provider troupe knows.
func (r Resolver) split(name string) (full, provider, model string, err error) {
	full = r.Expand(name)
	provider, model, ok := strings.Cut(full, ":")
	if !ok || model == "" {
		msg := howTo
		if full := modelname.Qualify(name); !ok && full != "" {
			msg = fmt.Sprintf("it names no provider; did you mean %s? (%s)", full, howTo)
		} else if !ok {
			msg = fmt.Sprintf("%q is not an alias (the aliases are: %s); %s", name, strings.Join(sortedKeys(r.cfg().aliases()), ", "), howTo)
		}
		return "", "", "", fmt.Errorf("%w %q: %s", ErrUnresolvable, name, msg)
	}
	if !slices.Contains(providerNames, provider) {
		return "", "", "", fmt.Errorf("%w %q: unknown provider %q; %s", ErrUnresolvable, name, provider, howTo)
	}
	return full, provider, model, nil
}

// options are the wrapper's options for the model named full, from the
// config and the resolver's own fields; the provider's constructor adds
// what depends on its wire.
func (r Resolver) options(full string) Options {
	cfg := r.cfg()
	o := Options{
		Name:        full,
		OutputLimit: outputLimit(cfg, full),
		Logger:      r.Logger,
		Stream:      r.Stream,
	}
	if p, ok := cfg.price(full); ok {
		o.Price = &p
	}
	o.Retry = r.retry(cfg)
	return o
}

// retry is the config file's retry policy with the resolver's fields that
// are set over it; the backoff and the sleep only the resolver sets.
func (r Resolver) retry(cfg *Config) Retry {
	retry := Retry{Attempts: cfg.Retry.Attempts, MaxWait: time.Duration(cfg.Retry.MaxWait)}
	if r.Retry.Attempts > 0 {
		retry.Attempts = r.Retry.Attempts
	}
	if r.Retry.MaxWait > 0 {
		retry.MaxWait = r.Retry.MaxWait
	}
	retry.Base, retry.Max, retry.Sleep = r.Retry.Base, r.Retry.Max, r.Retry.Sleep
	return retry
}

// httpClient carries a provider client's requests over wire through a
// recorder, which keeps what failures said and caps what is read.
func (r Resolver) httpClient(wire http.RoundTripper) *http.Client {
	return &http.Client{Transport: &recorder{base: wire, maxBody: r.maxResponseBytes()}}
}

// configName names the user's config file in messages.
func (r Resolver) configName() string {
	if r.userFile == "" {
		return "the config file"
	}
	return r.userFile
}

// openAI is OpenAI, or an OpenAI-compatible server at OPENAI_BASE_URL
// (which may need no key).
func (r Resolver) openAI(name, model string, o *Options) (llms.Model, error) {
	key, _ := r.key("openai")
	base := r.openAIBase()
	if key == "" && base == "" {
		return nil, fmt.Errorf("%w %q: set %s (or OPENAI_BASE_URL for an OpenAI-compatible server, or api_key under providers.openai in %s)", ErrUnresolvable, name, r.keyVar("openai"), r.configName())
	}
	if base == "" {
		base = DefaultOpenAIBaseURL
	}
	if key == "" {
		key = "not-needed" // local OpenAI-compatible servers still want a bearer token
	}
	o.Secrets = []string{key}
	// OpenAI-compatible servers know max_tokens; OpenAI itself wants
	// max_completion_tokens, and its reasoning models refuse the other.
	o.LegacyMaxTokens = !sameURL(base, DefaultOpenAIBaseURL) && !openAIReasoning(model)
	return r.openAIClient(name, model, key, strings.TrimRight(base, "/"), r.env("OPENAI_ORGANIZATION"))
}

// anthropic is Anthropic's Messages API, which requires an output limit
// on every call.
func (r Resolver) anthropic(name, model string, o *Options) (llms.Model, error) {
	key, _ := r.key("anthropic")
	if key == "" {
		return nil, fmt.Errorf("%w %q: set %s (or api_key under providers.anthropic in %s)", ErrUnresolvable, name, r.keyVar("anthropic"), r.configName())
	}
	base := r.env("ANTHROPIC_BASE_URL")
	if base == "" {
		base = r.cfg().Providers.Anthropic.BaseURL
	}
	base = anthropicBase(base)
	o.Secrets = []string{key}
	o.DefaultMaxTokens = o.OutputLimit
	// anthropicWire joins again the turns the wrapper splits into one
	// message a part for langchaingo.
	client := r.httpClient(&anthropicWire{base: r.transport()})
	inner, err := anthropic.New(anthropic.WithModel(model), anthropic.WithToken(key), anthropic.WithBaseURL(base), anthropic.WithHTTPClient(client))
	if err != nil {
		return nil, fmt.Errorf("%w %q: %w", ErrUnresolvable, name, err)
	}
	return inner, nil
}

// ollama is Ollama's OpenAI-compatible endpoint, because langchaingo's
// native Ollama client does not pass tools.
func (r Resolver) ollama(name, model string, o *Options) (llms.Model, error) {
	o.LegacyMaxTokens = true
	return r.openAIClient(name, model, "ollama", r.ollamaHost()+"/v1", "")
}

// googleAI is Gemini's OpenAI-compatible endpoint: the same client, tool
// calling and wire handling as OpenAI.
func (r Resolver) googleAI(name, model string, o *Options) (llms.Model, error) {
	key, _ := r.key("googleai")
	if key == "" {
		keys := "GOOGLE_API_KEY or GEMINI_API_KEY"
		if v := r.keyVar("googleai"); v != keyEnv["googleai"] {
			keys = v
		}
		return nil, fmt.Errorf("%w %q: set %s (or api_key under providers.googleai in %s)", ErrUnresolvable, name, keys, r.configName())
	}
	base := r.cfg().Providers.GoogleAI.BaseURL
	if base == "" {
		base = DefaultGoogleAIBaseURL
	}
	o.Secrets = []string{key}
	o.LegacyMaxTokens = true
	return r.openAIClient(name, model, key, strings.TrimRight(base, "/"), "")
}

// openAIClient is langchaingo's OpenAI client, which speaks to OpenAI,
// compatible servers, Ollama and Gemini alike.
func (r Resolver) openAIClient(name, model, key, base, org string) (llms.Model, error) {
	inner, err := openai.New(openai.WithModel(model), openai.WithToken(key), openai.WithBaseURL(base),
		openai.WithOrganization(org), openai.WithHTTPClient(r.httpClient(r.transport())))
	if err != nil {
		return nil, fmt.Errorf("%w %q: %w", ErrUnresolvable, name, err)
	}
	return inner, nil
}

// anthropicBase accepts the base URL with or without /v1, as Anthropic's
// own SDKs take ANTHROPIC_BASE_URL without it.
func anthropicBase(base string) string {
	if base == "" {
		return DefaultAnthropicBaseURL
	}
	base = strings.TrimRight(base, "/")
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	return base
}

func openAIReasoning(model string) bool {
	m := strings.ToLower(model)
	for _, p := range []string{"o1", "o3", "o4", "gpt-5"} {
		if strings.HasPrefix(m, p) {
			return true
		}
	}
	return false
}

func sameURL(a, b string) bool {
	return strings.TrimRight(a, "/") == strings.TrimRight(b, "/")
}
