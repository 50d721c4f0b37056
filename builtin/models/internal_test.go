package models

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/sdk/fault"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		status int
		body   string
		code   fault.Code
		msg    string
		retry  bool
	}{
		{401, `{"error":{"message":"Incorrect API key provided: sk-abc...xyz.","type":"invalid_request_error","code":"invalid_api_key"}}`, fault.Unauthenticated, "Incorrect API key", false},
		{403, `{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission"}}`, fault.Unauthenticated, "permission", false},
		{429, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`, fault.RateLimited, "per-minute", true},
		{429, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}`, fault.RateLimited, "quota", false},
		{400, `{"error":{"message":"This model's maximum context length is 128000 tokens.","code":"context_length_exceeded"}}`, fault.ContextTooLong, "maximum context length", false},
		{400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 204917 tokens > 200000 maximum"}}`, fault.ContextTooLong, "prompt is too long", false},
		{413, `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`, fault.ContextTooLong, "maximum allowed", false},
		{400, `[{"error":{"code":400,"message":"Request contains an invalid argument.","status":"INVALID_ARGUMENT"}}]`, fault.InvalidArgument, "invalid argument", false},
		{404, `{"error":"model \"llama9\" not found, try pulling it first"}`, fault.InvalidArgument, "try pulling it first", false},
		{500, `{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`, fault.Unavailable, "server had an error", true},
		{529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, fault.Unavailable, "Overloaded", true},
		{502, `<html><body>Bad Gateway</body></html>`, fault.Unavailable, "Bad Gateway", true},
		{408, ``, fault.Unavailable, "status code", true},
	}
	for _, tt := range tests {
		f := classify("p", errors.New("API returned unexpected status code: 0"), &exchange{status: tt.status, body: []byte(tt.body)}, nil)
		require.NotNil(t, f, tt.body)
		assert.Equal(t, tt.code, f.code, "%d %s", tt.status, tt.body)
		assert.Contains(t, f.message, tt.msg)
		assert.Equal(t, tt.retry, f.retryable(), "%d %s", tt.status, tt.body)
		e := f.err()
		assert.ErrorIs(t, e, tt.code.Sentinel(), "the caller's error matches the code's sentinel")
		assert.Equal(t, tt.retry, e.Retryable)
	}
	assert.Nil(t, classify("p", errors.New("parse response: unexpected EOF"), &exchange{status: 200}, nil))
	f := classify("p", errors.New("anthropic: failed to create message: received error event: map[error:map[message:Overloaded type:overloaded_error]]"), &exchange{status: 200}, nil)
	require.NotNil(t, f)
	assert.Equal(t, fault.Unavailable, f.code, "an error event in the middle of a stream")
}

func TestRedact(t *testing.T) {
	s := redact("bad key sk-test-0123456789abcdefghij and sk-ant-api03-AbCdEf_123456 and AIzaSyA1234567890abcdefghijklmnopqrstu, and mine: hunter2secret", []string{"hunter2secret"})
	assert.Equal(t, "bad key [redacted] and [redacted] and [redacted], and mine: [redacted]", s)
	assert.Equal(t, "short sk-1 stays", redact("short sk-1 stays", []string{"abc"}))
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 9, 29, 10, 0, 0, 0, time.UTC)
	h := func(m map[string]string) func(string) string {
		return func(k string) string { return http.Header{http.CanonicalHeaderKey(k): {m[k]}}.Get(k) }
	}
	assert.Equal(t, 3*time.Second, parseRetryAfter(h(map[string]string{"Retry-After": "3"}), now))
	assert.Equal(t, 1500*time.Millisecond, parseRetryAfter(h(map[string]string{"Retry-After": "1.5"}), now))
	assert.Equal(t, 250*time.Millisecond, parseRetryAfter(h(map[string]string{"Retry-After-Ms": "250", "Retry-After": "1"}), now))
	assert.Equal(t, 30*time.Second, parseRetryAfter(h(map[string]string{"Retry-After": "Mon, 29 Sep 2025 10:00:30 GMT"}), now))
	assert.Zero(t, parseRetryAfter(h(map[string]string{"Retry-After": "soon"}), now))
	assert.Zero(t, parseRetryAfter(h(nil), now))
}

func TestBackoffGrowsAndIsCapped(t *testing.T) {
	r := Retry{Base: time.Second, Max: 4 * time.Second}
	for i := 0; i < 50; i++ {
		for n, hi := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
			d := r.Backoff(n + 1)
			assert.True(t, d >= hi/2 && d <= hi, "attempt %d: %s", n+1, d)
		}
	}
}

func TestAnthropicMessages(t *testing.T) {
	call := func(id, args string) llms.ToolCall {
		return llms.ToolCall{ID: id, Type: "function", FunctionCall: &llms.FunctionCall{Name: "grep", Arguments: args}}
	}
	in := []llms.MessageContent{
		{Role: llms.ChatMessageTypeSystem, Parts: []llms.ContentPart{llms.TextPart("one"), llms.TextPart("two")}},
		llms.TextParts(llms.ChatMessageTypeHuman, "task"),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.TextPart("looking"), call("a", `{"pattern":"x"}`), call("b", `{"pattern":`), call("c", ``)}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "a", Content: "1"}, llms.ToolCallResponse{ToolCallID: "b", Content: "2"}}},
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.TextPart("  ")}},
	}
	out := anthropicMessages(in)
	var roles []llms.ChatMessageType
	for _, m := range out {
		assert.Len(t, m.Parts, 1, "one part a message: the only part langchaingo sends")
		roles = append(roles, m.Role)
	}
	assert.Equal(t, []llms.ChatMessageType{"system", "human", "ai", "ai", "ai", "ai", "tool", "tool"}, roles)
	assert.Equal(t, llms.TextPart("one\n\ntwo"), out[0].Parts[0])
	assert.Equal(t, `{"pattern":"x"}`, out[3].Parts[0].(llms.ToolCall).FunctionCall.Arguments)
	assert.Equal(t, `{}`, out[4].Parts[0].(llms.ToolCall).FunctionCall.Arguments, "malformed arguments go out as {}")
	assert.Equal(t, `{}`, out[5].Parts[0].(llms.ToolCall).FunctionCall.Arguments)
	assert.Equal(t, `{"pattern":`, in[2].Parts[2].(llms.ToolCall).FunctionCall.Arguments, "the caller's messages are not changed")
}

func TestMergeAnthropicTurns(t *testing.T) {
	body := `{"model":"m","max_tokens":10,"messages":[
		{"role":"user","content":"task"},
		{"role":"assistant","content":[{"type":"text","text":"looking"}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"grep","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"1"}]},
		{"role":"user","content":"more"}]}`
	out, changed := mergeAnthropicTurns([]byte(body))
	require.True(t, changed)
	var got struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(out, &got))
	assert.Equal(t, "m", got.Model)
	require.Len(t, got.Messages, 3)
	assert.Len(t, got.Messages[1].Content, 2)
	assert.Equal(t, "tool_result", got.Messages[2].Content[0]["type"])
	assert.Equal(t, map[string]any{"type": "text", "text": "more"}, got.Messages[2].Content[1])

	same := `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}`
	out, changed = mergeAnthropicTurns([]byte(same))
	assert.False(t, changed)
	assert.Equal(t, same, string(out), "a request that needs nothing goes out untouched")
}

func TestIsToolDelta(t *testing.T) {
	assert.True(t, isToolDelta([]byte(`[{"index":0,"id":"call_1","type":"function","function":{"name":"grep","arguments":""}}]`)))
	assert.True(t, isToolDelta([]byte(`[{"index":0,"function":{"arguments":"{\"pat"}}]`)))
	assert.False(t, isToolDelta([]byte(`[1, 2, 3] is a list`)))
	assert.False(t, isToolDelta([]byte(`The answer`)))
	assert.False(t, isToolDelta([]byte(`[{"name":"x"}]`)))
}

func TestEncodingFor(t *testing.T) {
	assert.Equal(t, "o200k_base", encodingFor("openai", "gpt-4o-mini"))
	assert.Equal(t, "o200k_base", encodingFor("openai", "gpt-5"))
	assert.Equal(t, "cl100k_base", encodingFor("openai", "gpt-4-turbo"))
	assert.Equal(t, "", encodingFor("openai", "qwen2.5-coder"))
	assert.Equal(t, "", encodingFor("anthropic", "claude-sonnet-4-5"))
	assert.Equal(t, 2, EstimateTokens("openai:gpt-4o", "hello world"))
	assert.Equal(t, 3, EstimateTokens("anthropic:claude-haiku-4-5", "hello world"))
}
