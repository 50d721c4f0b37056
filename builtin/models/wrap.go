package models

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"
	"github.com/troupe-dev/troupe/builtin/models/modelcap"
)

// Retry says how a failed call is retried: rate limits (429) and server
// errors (5xx, 529, 408) are tried again after an exponential backoff with
// jitter, or after the wait the provider asks for in Retry-After; never
// past the context's deadline. The zero value is the default policy.
type Retry struct {
	// Attempts is how many times a call is made at most. Default 4; 1
	// turns retries off.
	Attempts int
	// Base is the first backoff. Default 1s; each later one doubles.
	Base time.Duration
	// Max caps one backoff. Default 30s.
	Max time.Duration
	// MaxWait is the longest Retry-After honoured; a provider asking for
	// longer ends the call at once. Default 60s.
	MaxWait time.Duration
	// Sleep waits d or until ctx ends; a timer when nil. Tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (r Retry) withDefaults() Retry {
	if r.Attempts <= 0 {
		r.Attempts = 4
	}
	if r.Base <= 0 {
		r.Base = time.Second
	}
	if r.Max <= 0 {
		r.Max = 30 * time.Second
	}
	if r.MaxWait <= 0 {
		r.MaxWait = 60 * time.Second
	}
	if r.Sleep == nil {
		r.Sleep = sleep
	}
	return r
}

// Backoff is the wait before attempt n+1 when the provider named none:
// Base·2^(n-1), capped at Max, less up to half of it at random.
func (r Retry) Backoff(n int) time.Duration {
	r = r.withDefaults()
	d := r.Base
	for i := 1; i < n && d < r.Max; i++ {
		d *= 2
	}
	d = min(d, r.Max)
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// StreamFunc receives the text of an answer as the provider produces it.
// It may be called from a goroutine other than the caller's, and must not
// block for long.
type StreamFunc func(ctx context.Context, text string)

type streamKey struct{}

// WithStream returns a context under which model calls stream: fn gets
// each piece of answer text as it arrives, from providers that stream
// (OpenAI and compatible servers, Anthropic, Ollama). The call still
// returns the whole answer. Tool-call arguments are not streamed.
func WithStream(ctx context.Context, fn StreamFunc) context.Context {
	return context.WithValue(ctx, streamKey{}, fn)
}

func streamFrom(ctx context.Context) StreamFunc {
	fn, _ := ctx.Value(streamKey{}).(StreamFunc)
	return fn
}

// Options configure Wrap.
type Options struct {
	// Name is the model's full name, "provider:model". The provider
	// selects quirk handling and the token estimate; the name selects the
	// price.
	Name string
	// Price, when set, adds GenerationInfo["CostUSD"] to every answer.
	Price *Price
	// OutputLimit caps the output tokens a call asks for (a manager with a
	// token budget asks for everything left). 0 leaves requests as they are.
	OutputLimit int
	// DefaultMaxTokens is asked for when the caller names no limit
	// (Anthropic requires one).
	DefaultMaxTokens int
	// LegacyMaxTokens sends max_tokens rather than max_completion_tokens,
	// for OpenAI-compatible servers that know only the older field.
	LegacyMaxTokens bool
	// Retry is the retry policy.
	Retry Retry
	// Secrets are removed from error messages (the API key).
	Secrets []string
	// Stream, when set, streams every call (see WithStream; a stream
	// function in the context takes precedence).
	Stream StreamFunc
	// Logger receives retries and estimates. Default slog.Default().
	Logger *slog.Logger
}

// Model wraps a langchaingo model with what troupe needs of every
// provider: token usage in GenerationInfo (the provider's counts, or an
// estimate marked "TokensEstimated"), the price as "CostUSD", retries,
// classified errors (see Error), streaming, and the message shapes each
// provider's langchaingo client handles. It is safe for concurrent use
// when the wrapped model is.
type Model struct {
	inner    llms.Model
	o        Options
	provider string
	model    string

	countOnce sync.Once
	counter   counter
	estOnce   sync.Once
}

var _ llms.Model = (*Model)(nil)
var (
	_ modelcap.TokenCounter  = (*Model)(nil)
	_ modelcap.OutputLimiter = (*Model)(nil)
	_ modelcap.Pricer        = (*Model)(nil)
)

// Wrap returns m wrapped.
func Wrap(m llms.Model, o Options) *Model {
	o.Retry = o.Retry.withDefaults()
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	provider, model, ok := strings.Cut(o.Name, ":")
	if !ok {
		provider, model = "", o.Name
	}
	return &Model{inner: m, o: o, provider: provider, model: model}
}

// Name is the model's full name.
func (m *Model) Name() string { return m.o.Name }

// OutputLimit is the most output tokens one call asks for; 0 when the
// options set no limit.
func (m *Model) OutputLimit() int { return m.o.OutputLimit }

// Unwrap returns the wrapped model.
func (m *Model) Unwrap() llms.Model { return m.inner }

// Call answers a single prompt.
func (m *Model) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// GenerateContent calls the model, retrying what is worth retrying, and
// returns its answer with usage (and cost) in every choice's
// GenerationInfo. For Anthropic the answer's content blocks, which
// langchaingo returns as one choice each, are joined into one choice, so
// Choices[0] holds the whole turn: its text and all its tool calls.
func (m *Model) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	if ctx.Err() != nil {
		return nil, stopped(ctx, m.label())
	}
	var opts llms.CallOptions
	for _, o := range options {
		o(&opts)
	}
	callOpts := m.limitOutput(options, opts.MaxTokens)
	// Set once text has reached a stream: such a call is not retried, as
	// the text cannot be taken back.
	var streamed atomic.Bool
	if stream := m.streamTo(ctx, opts.StreamingFunc, &streamed); stream != nil {
		callOpts = append(callOpts, stream)
	}
	sent := msgs
	if m.provider == "anthropic" {
		sent = anthropicMessages(msgs)
	}

	for attempt := 1; ; attempt++ {
		ex := &exchange{}
		resp, err := m.inner.GenerateContent(withExchange(ctx, ex), sent, callOpts...)
		if err == nil && ctx.Err() != nil {
			// langchaingo's OpenAI client ends a stream cut by the context
			// without an error, handing back a partial answer.
			return nil, stopped(ctx, m.label())
		}
		if err == nil {
			if resp == nil || len(resp.Choices) == 0 {
				return nil, fmt.Errorf("%s: the provider returned no answer", m.label())
			}
			m.finish(resp, msgs, opts.Tools)
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, stopped(ctx, m.label())
		}
		f := classify(m.label(), err, ex, m.o.Secrets)
		if f == nil {
			return nil, wrapOther(m.label(), err, m.o.Secrets)
		}
		f.attempts = attempt
		if !f.retryable() || streamed.Load() || attempt >= m.o.Retry.Attempts {
			return nil, f.err()
		}
		wait, ok := m.delay(ctx, f, attempt)
		if !ok {
			return nil, f.err()
		}
		m.o.Logger.Info("model call failed; retrying", "model", m.o.Name, "status", f.status, "code", string(f.code),
			"attempt", attempt, "wait", wait.Round(time.Millisecond).String())
		if err := m.o.Retry.Sleep(ctx, wait); err != nil {
			return nil, stopped(ctx, m.label())
		}
	}
}

// limitOutput returns the caller's options with the output limit the call
// asks for: the caller's limit (asked) capped at the model's, else the
// default the provider requires, in the field the server knows. The
// result never shares its array with options, so appending to it leaves
// the caller's slice alone.
func (m *Model) limitOutput(options []llms.CallOption, asked int) []llms.CallOption {
	callOpts := options[:len(options):len(options)]
	maxTokens := asked
	if m.o.OutputLimit > 0 && maxTokens > m.o.OutputLimit {
		maxTokens = m.o.OutputLimit
	}
	if maxTokens <= 0 && m.o.DefaultMaxTokens > 0 {
		maxTokens = m.o.DefaultMaxTokens
	}
	if maxTokens != asked {
		callOpts = append(callOpts, llms.WithMaxTokens(maxTokens))
	}
	if m.o.LegacyMaxTokens && maxTokens > 0 {
		callOpts = append(callOpts, openai.WithLegacyMaxTokensField())
	}
	return callOpts
}

// streamTo returns the option that streams to the context's function, the
// model's, and orig, the one the caller passed with
// llms.WithStreamingFunc: text only, never the fragments of tool-call
// arguments langchaingo's OpenAI client also hands over. It sets streamed
// when text went out. It is nil when there is nowhere to stream.
func (m *Model) streamTo(ctx context.Context, orig func(context.Context, []byte) error, streamed *atomic.Bool) llms.CallOption {
	fn := streamFrom(ctx)
	if fn == nil {
		fn = m.o.Stream
	}
	if fn == nil && orig == nil {
		return nil
	}
	return llms.WithStreamingFunc(func(ctx context.Context, chunk []byte) error {
		if len(chunk) == 0 || isToolDelta(chunk) {
			return nil
		}
		streamed.Store(true)
		if fn != nil {
			fn(ctx, string(chunk))
		}
		if orig != nil {
			return orig(ctx, chunk)
		}
		return nil
	})
}

// delay is how long to wait before retrying the failure f of the
// given attempt: what the provider asked for, else the backoff. It is
// false, with f saying why it gave up, when the wait is longer than the
// policy allows or would pass the context's deadline.
func (m *Model) delay(ctx context.Context, f *failure, attempt int) (time.Duration, bool) {
	wait := m.o.Retry.Backoff(attempt)
	if f.retryAfter > 0 {
		wait = f.retryAfter
	}
	if wait > m.o.Retry.MaxWait {
		f.gaveUp = fmt.Sprintf("asked to wait %s, longer than the %s allowed", wait.Round(time.Second), m.o.Retry.MaxWait)
		return 0, false
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= wait {
		f.gaveUp = fmt.Sprintf("waiting %s more would pass the deadline", wait.Round(time.Millisecond))
		return 0, false
	}
	return wait, true
}

func (m *Model) label() string {
	if m.provider != "" {
		return m.provider
	}
	return "model"
}

// finish normalises an answer: one choice per turn for Anthropic, an ID on
// every tool call, usage and cost in GenerationInfo.
func (m *Model) finish(resp *llms.ContentResponse, msgs []llms.MessageContent, tools []llms.Tool) {
	if m.provider == "anthropic" {
		resp.Choices = []*llms.ContentChoice{joinChoices(resp.Choices)}
	}
	for _, ch := range resp.Choices {
		if ch == nil {
			continue
		}
		fillToolCallIDs(ch)
		m.account(ch, msgs, tools)
	}
}

// account puts the call's usage into the choice: the provider's counts
// when it gave any, an estimate otherwise. Anthropic repeats its usage on
// every content block; the blocks are one choice by now, so it is read
// once.
func (m *Model) account(ch *llms.ContentChoice, msgs []llms.MessageContent, tools []llms.Tool) {
	info := ch.GenerationInfo
	if info == nil {
		info = map[string]any{}
		ch.GenerationInfo = info
	}
	in, okIn := modelcap.GenerationInt(info, "PromptTokens", "InputTokens")
	out, okOut := modelcap.GenerationInt(info, "CompletionTokens", "OutputTokens")
	if m.provider == "anthropic" {
		// input_tokens leaves out what was written to or read from the
		// prompt cache; all of it went through the model.
		c1, _ := modelcap.GenerationInt(info, "CacheCreationInputTokens")
		c2, _ := modelcap.GenerationInt(info, "CacheReadInputTokens")
		in += c1 + c2
	}
	estimated := false
	if !okIn || !okOut || (in == 0 && out == 0) {
		m.estOnce.Do(func() {
			m.o.Logger.Debug("the provider reported no token usage; estimating", "model", m.o.Name)
		})
		c := m.tokens()
		if !okIn || in == 0 {
			in = c.inputTokens(msgs, tools)
		}
		if !okOut || out == 0 {
			out = c.outputTokens(ch)
		}
		estimated = true
	}
	info["PromptTokens"], info["CompletionTokens"] = in, out
	info["InputTokens"], info["OutputTokens"] = in, out
	info["TotalTokens"] = in + out
	info["TokensEstimated"] = estimated
	if m.o.Price != nil {
		info["CostUSD"] = m.o.Price.Cost(in, out)
	}
}

// Cost is what a call with these token counts costs by the model's price,
// in USD; known is false when it has none, and a cost budget cannot be
// kept with it.
func (m *Model) Cost(inputTokens, outputTokens int) (usd float64, known bool) {
	if m.o.Price == nil {
		return 0, false
	}
	return m.o.Price.Cost(inputTokens, outputTokens), true
}

// CountTokens counts text's tokens as the model's provider does, where
// troupe has its tokenizer (OpenAI models), else four characters a token.
// The manager uses it for its estimate before every call.
func (m *Model) CountTokens(text string) int { return m.tokens().count(text) }

func (m *Model) tokens() counter {
	m.countOnce.Do(func() { m.counter = newCounter(m.provider, m.model) })
	return m.counter
}

// isToolDelta recognises the JSON of streamed tool-call fragments, which
// langchaingo's OpenAI client hands to the streaming function along with
// the text.
func isToolDelta(chunk []byte) bool {
	if chunk[0] != '[' {
		return false
	}
	var deltas []struct {
		Function *json.RawMessage `json:"function"`
	}
	if json.Unmarshal(chunk, &deltas) != nil || len(deltas) == 0 {
		return false
	}
	for _, d := range deltas {
		if d.Function == nil {
			return false
		}
	}
	return true
}

var callSeq atomic.Uint64

// fillToolCallIDs gives an ID to tool calls that came without one (some
// local servers), so that results can name the call they answer.
func fillToolCallIDs(ch *llms.ContentChoice) {
	for i := range ch.ToolCalls {
		tc := &ch.ToolCalls[i]
		if tc.ID == "" {
			tc.ID = fmt.Sprintf("call_troupe_%d", callSeq.Add(1))
		}
		if tc.Type == "" {
			tc.Type = "function"
		}
	}
	if ch.FuncCall == nil && len(ch.ToolCalls) > 0 {
		ch.FuncCall = ch.ToolCalls[0].FunctionCall
	}
}
