package models_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/builtin/models"
)

func resolver(env map[string]string) models.Resolver {
	return models.Resolver{Getenv: func(k string) string { return env[k] }}
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name, model string
		env         map[string]string
		errMsg      string
	}{
		{"offline", "offline", nil, ""},
		{"openai with key", "openai:gpt-4o-mini", map[string]string{"OPENAI_API_KEY": "k"}, ""},
		{"openai-compatible server", "openai:local", map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}, ""},
		{"openai without key", "openai:gpt-4o-mini", nil, "OPENAI_API_KEY"},
		{"anthropic without key", "anthropic:claude-sonnet-4-5", nil, "ANTHROPIC_API_KEY"},
		{"anthropic with key", "anthropic:claude-sonnet-4-5", map[string]string{"ANTHROPIC_API_KEY": "k"}, ""},
		{"ollama", "ollama:qwen2.5-coder", map[string]string{"OLLAMA_HOST": "127.0.0.1:11434"}, ""},
		{"unknown provider", "acme:model", nil, `unknown provider "acme"`},
		{"no provider", "gpt-4o", nil, "openai:MODEL"},
		{"empty model", "openai:", nil, "openai:MODEL"},
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
			assert.NotNil(t, m)
		})
	}
}

func TestDefault(t *testing.T) {
	assert.Equal(t, "offline", resolver(nil).Default())
	assert.Equal(t, "openai:x", resolver(map[string]string{"TROUPE_MODEL": "openai:x"}).Default())
}
