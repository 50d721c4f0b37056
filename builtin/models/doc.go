// Package models turns model names into langchaingo models, and wraps each
// with what troupe needs of every provider.
//
// # Names
//
// A name is "provider:model" — openai:gpt-4o-mini,
// anthropic:claude-sonnet-4-5, ollama:qwen2.5-coder, googleai:gemini-2.5-flash
// — an alias (sonnet, haiku, opus and mini are built in; a config file adds
// more), or "offline", the embedded retrieval model that needs no key and no
// network. openai: also reaches any OpenAI-compatible server (vLLM,
// llama.cpp, LM Studio) through OPENAI_BASE_URL; ollama: and googleai: go
// through those providers' OpenAI-compatible endpoints, because langchaingo's
// native Ollama client passes no tools.
//
// # Configuration
//
// Keys and hosts come from the usual environment variables (OPENAI_API_KEY,
// OPENAI_BASE_URL, ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, GOOGLE_API_KEY or
// GEMINI_API_KEY, OLLAMA_HOST) and from config files: the user's
// $XDG_CONFIG_HOME/troupe/config.yaml and a project's .troupe/config.yaml,
// the project's overriding the user's key by key (see Config for the
// schema). Load reads both; the files are read strictly, and a mistake is an
// error naming the file, the line and the key.
//
// Resolver.Choose picks the default model: TROUPE_MODEL, then the config
// files' model, then a running Ollama (probed for ProbeTimeout), then the
// first provider whose key is present, then the offline model; its Choice
// says why, for the user.
//
// # The wrapper
//
// Every model Resolve returns, but the offline one, is a *Model (see Wrap):
//
//   - usage: the provider's token counts in every choice's GenerationInfo
//     (PromptTokens/CompletionTokens and InputTokens/OutputTokens alike), or
//     an estimate when the provider gives none — tiktoken for OpenAI models,
//     four characters a token otherwise — marked TokensEstimated;
//   - cost: GenerationInfo["CostUSD"] from the config's price table;
//   - retries of 429 and 5xx with exponential backoff and jitter, honouring
//     Retry-After, never past the context's deadline (see Retry);
//   - errors classified in troupe's one vocabulary of failures: a
//     *fault.Error whose code is unauthenticated, rate_limited,
//     context_too_long, unavailable, invalid_argument, unreachable or
//     response_too_large (errors.Is matches fault.ErrRateLimited and the
//     rest), with the provider's message and the key redacted and
//     Retryable set; a call stopped by its context matches
//     context.Canceled or context.DeadlineExceeded;
//   - output tokens capped to what the model accepts (a manager with a token
//     budget asks for all that is left);
//   - streaming: WithStream, or Resolver.Stream, hands answer text to a
//     function as it arrives;
//   - provider quirks: langchaingo's Anthropic client sends only the first
//     part of a message and returns one choice per content block, so a turn
//     with several tool calls is split into one message per part (merged
//     back into one turn on the wire) and the answer's blocks are joined into
//     one choice; tool calls without an ID get one; local OpenAI-compatible
//     servers get a placeholder token and the max_tokens field.
//
// The package providertest replays recorded provider HTTP exchanges; the
// recordings under testdata/providers prove all of this against the real
// langchaingo clients and the real manager.
package models
