package models

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/troupe-dev/troupe/builtin/offline"
)

// Offline is the name of the embedded retrieval model.
const Offline = offline.Name

// ErrUnresolvable is wrapped by every resolution error.
var ErrUnresolvable = errors.New("cannot resolve model")

// Resolver turns model names into models. The zero value reads the
// process environment.
type Resolver struct {
	// Getenv reads environment variables; os.Getenv when nil.
	Getenv func(string) string
}

func (r Resolver) env(k string) string {
	if r.Getenv != nil {
		return r.Getenv(k)
	}
	return os.Getenv(k)
}

// Default is the model to use when nothing names one: $TROUPE_MODEL, else
// the offline model.
func (r Resolver) Default() string {
	if m := strings.TrimSpace(r.env("TROUPE_MODEL")); m != "" {
		return m
	}
	return Offline
}

const howTo = "name a model as offline, openai:MODEL, anthropic:MODEL or ollama:MODEL"

// Resolve returns the model a name stands for. It makes no network call.
func (r Resolver) Resolve(_ context.Context, name string) (llms.Model, error) {
	if name == Offline {
		return offline.New(), nil
	}
	provider, model, ok := strings.Cut(name, ":")
	if !ok || model == "" {
		return nil, fmt.Errorf("%w %q: %s", ErrUnresolvable, name, howTo)
	}
	switch provider {
	case "openai":
		key, base := r.env("OPENAI_API_KEY"), r.env("OPENAI_BASE_URL")
		if key == "" && base == "" {
			return nil, fmt.Errorf("%w %q: set OPENAI_API_KEY (or OPENAI_BASE_URL for an OpenAI-compatible server)", ErrUnresolvable, name)
		}
		if key == "" {
			key = "unused" // local OpenAI-compatible servers still want a token
		}
		opts := []openai.Option{openai.WithModel(model), openai.WithToken(key)}
		if base != "" {
			opts = append(opts, openai.WithBaseURL(base))
		}
		return wrap(openai.New(opts...))
	case "anthropic":
		key := r.env("ANTHROPIC_API_KEY")
		if key == "" {
			return nil, fmt.Errorf("%w %q: set ANTHROPIC_API_KEY", ErrUnresolvable, name)
		}
		return wrap(anthropic.New(anthropic.WithModel(model), anthropic.WithToken(key)))
	case "ollama":
		// Ollama's OpenAI-compatible endpoint, because langchaingo's
		// native Ollama client does not pass tools.
		host := r.env("OLLAMA_HOST")
		if host == "" {
			host = "http://127.0.0.1:11434"
		}
		if !strings.Contains(host, "://") {
			host = "http://" + host
		}
		return wrap(openai.New(openai.WithModel(model), openai.WithToken("ollama"), openai.WithBaseURL(strings.TrimRight(host, "/")+"/v1")))
	default:
		return nil, fmt.Errorf("%w %q: unknown provider %q; %s", ErrUnresolvable, name, provider, howTo)
	}
}

func wrap[M llms.Model](m M, err error) (llms.Model, error) {
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnresolvable, err)
	}
	return m, nil
}
