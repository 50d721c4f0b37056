package models_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/builtin/models"
	"github.com/troupe-dev/troupe/sdk/fault"
)

// counting is a transport that counts the response body bytes the client
// takes off the wire, below the resolver's own transport.
type counting struct{ n atomic.Int64 }

func (c *counting) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &c.n}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// endless serves a response that never ends: head once, then chunk over
// and over (every pause, when set) until the client goes away.
func endless(t *testing.T, contentType, head, chunk string, pause time.Duration) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(http.StatusOK)
		if _, err := io.WriteString(w, head); err != nil {
			return
		}
		flusher, _ := w.(http.Flusher)
		for r.Context().Err() == nil {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
			if pause > 0 {
				flusher.Flush()
				select {
				case <-time.After(pause):
				case <-r.Context().Done():
					return
				}
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &requests
}

const sseChunk = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"more "},"finish_reason":null}]}` + "\n\n"

func TestEndlessResponseIsCutAtTheLimit(t *testing.T) {
	const limit = 1 << 20
	tests := []struct {
		name        string
		model       string
		stream      bool
		contentType string
		head, chunk string
	}{
		{"openai", "openai:gpt-4o-mini", false, "application/json",
			`{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"`, "aaaaaaaaaaaaaaaa"},
		{"openai streaming", "openai:gpt-4o-mini", true, "text/event-stream", "", sseChunk},
		{"anthropic", "anthropic:claude-haiku-4-5", false, "application/json",
			`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"`, "aaaaaaaaaaaaaaaa"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, requests := endless(t, tt.contentType, tt.head, tt.chunk, 0)
			wire := &counting{}
			r := resolver(map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1", "ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": srv.URL})
			r.Transport = wire
			r.MaxResponseBytes = limit
			if tt.stream {
				r.Stream = func(context.Context, string) {}
			}
			m, err := r.Resolve(context.Background(), tt.model)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err = m.GenerateContent(ctx, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")})
			require.ErrorIs(t, err, fault.ErrResponseTooLarge)
			var e *fault.Error
			require.ErrorAs(t, err, &e, "classified like any other provider failure")
			assert.False(t, e.Retryable)
			assert.Contains(t, err.Error(), "1 MiB", "the message names the limit")
			assert.Contains(t, err.Error(), "max_response_bytes", "and the config key that raises it")
			assert.NotContains(t, err.Error(), "Resolver.", "it reaches the command line, which has no Go fields")
			assert.LessOrEqual(t, wire.n.Load(), int64(limit+1), "the client read no more than the limit")
			assert.Equal(t, int64(1), requests.Load(), "a response too large is not retried")
		})
	}
}

func TestResponseUnderTheLimitIsWhole(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"` + strings.Repeat("a", 4000) + `"},"finish_reason":"stop"}]}`))
	}))
	defer srv.Close()
	r := resolver(map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"})
	r.MaxResponseBytes = 8 << 10
	m, err := r.Resolve(context.Background(), "openai:gpt-4o-mini")
	require.NoError(t, err)
	resp, err := m.GenerateContent(context.Background(), []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")})
	require.NoError(t, err)
	assert.Len(t, resp.Choices[0].Content, 4000)
}

func TestConfigSetsTheResponseLimit(t *testing.T) {
	srv, _ := endless(t, "application/json", `{"choices":[{"message":{"content":"`, "aaaaaaaaaaaaaaaa", 0)
	cfg, err := models.ParseConfig("config.yaml", strings.NewReader("max_response_bytes: 2048\n"))
	require.NoError(t, err)
	wire := &counting{}
	r := resolver(map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"})
	r.Config, r.Transport = cfg, wire
	m, err := r.Resolve(context.Background(), "openai:gpt-4o-mini")
	require.NoError(t, err)
	_, err = m.GenerateContent(context.Background(), []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")})
	require.ErrorIs(t, err, fault.ErrResponseTooLarge)
	assert.Contains(t, err.Error(), "2 KiB")
	assert.LessOrEqual(t, wire.n.Load(), int64(2049))

	_, err = models.ParseConfig("config.yaml", strings.NewReader("max_response_bytes: -1\n"))
	require.ErrorIs(t, err, models.ErrConfig)
	assert.Contains(t, err.Error(), "config.yaml:1: max_response_bytes")
}

// A server that streams slowly and never ends is cut by the time budget,
// not by the size limit: the call returns at the deadline.
func TestEndlessStreamStopsAtTheDeadline(t *testing.T) {
	srv, _ := endless(t, "text/event-stream", "", sseChunk, 5*time.Millisecond)
	wire := &counting{}
	r := resolver(map[string]string{"OPENAI_BASE_URL": srv.URL + "/v1"})
	r.Transport = wire
	var streamed atomic.Int64
	r.Stream = func(context.Context, string) { streamed.Add(1) }
	m, err := r.Resolve(context.Background(), "openai:gpt-4o-mini")
	require.NoError(t, err)
	const deadline = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	_, err = m.GenerateContent(ctx, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")})
	elapsed := time.Since(start)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Positive(t, streamed.Load(), "the stream was being read when the deadline came")
	assert.Less(t, elapsed, deadline+5*time.Second, "returned at the deadline, not at the end of the stream")
	assert.LessOrEqual(t, wire.n.Load(), int64(models.DefaultMaxResponseBytes+1))
}
