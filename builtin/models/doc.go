// Package models resolves model names to langchaingo models.
//
// A name is "provider:model" (openai:gpt-4o-mini, anthropic:claude-sonnet-4-5,
// ollama:qwen2.5-coder) or "offline", the embedded retrieval model that
// needs no key and no network. Keys and hosts come from the usual
// environment variables.
package models
