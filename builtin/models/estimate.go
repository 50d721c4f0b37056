package models

import (
	"encoding/json"
	"strings"
	"sync"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
	"github.com/tmc/langchaingo/llms"
)

// Token estimates, for providers that report no usage (some local
// servers). OpenAI model families use their real tokenizer through
// tiktoken, with the BPE tables embedded (no download) and loaded on the
// first estimate; every other model counts four characters a token.

// encodingFor names the tiktoken encoding of an OpenAI model, or "".
func encodingFor(provider, model string) string {
	if provider != "openai" && provider != "" {
		return ""
	}
	m := strings.ToLower(model)
	switch {
	case strings.HasPrefix(m, "gpt-4o"), strings.HasPrefix(m, "chatgpt-4o"), strings.HasPrefix(m, "gpt-4.1"),
		strings.HasPrefix(m, "gpt-4.5"), strings.HasPrefix(m, "gpt-5"), strings.HasPrefix(m, "o1"),
		strings.HasPrefix(m, "o3"), strings.HasPrefix(m, "o4"), strings.HasPrefix(m, "gpt-oss"):
		return tiktoken.MODEL_O200K_BASE
	case strings.HasPrefix(m, "gpt-4"), strings.HasPrefix(m, "gpt-3.5"):
		return tiktoken.MODEL_CL100K_BASE
	}
	return ""
}

var (
	loaderOnce sync.Once
	encMu      sync.Mutex
	encCache   = map[string]*tiktoken.Tiktoken{}
	encFailed  = map[string]bool{}
)

// tokenizer returns the encoding's tokenizer, loading it on first use.
// A failure is remembered, so it is tried (and logged) once.
func tokenizer(name string) *tiktoken.Tiktoken {
	if name == "" {
		return nil
	}
	loaderOnce.Do(func() { tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader()) })
	encMu.Lock()
	defer encMu.Unlock()
	if t, ok := encCache[name]; ok {
		return t
	}
	if encFailed[name] {
		return nil
	}
	t, err := tiktoken.GetEncoding(name)
	if err != nil {
		encFailed[name] = true
		return nil
	}
	encCache[name] = t
	return t
}

// counter counts tokens for one model.
type counter struct {
	enc *tiktoken.Tiktoken
}

func newCounter(provider, model string) counter {
	return counter{enc: tokenizer(encodingFor(provider, model))}
}

func (c counter) count(s string) int {
	if s == "" {
		return 0
	}
	if c.enc != nil {
		encMu.Lock()
		n := len(c.enc.EncodeOrdinary(s))
		encMu.Unlock()
		return n
	}
	return (len(s) + 3) / 4
}

// EstimateTokens estimates the tokens of s for a model named
// "provider:model": exact for OpenAI models tiktoken knows, four
// characters a token otherwise.
func EstimateTokens(name, s string) int {
	provider, model, _ := strings.Cut(name, ":")
	return newCounter(provider, model).count(s)
}

// perMessage is the few tokens each message costs for its role and
// framing, as OpenAI documents for its chat format.
const perMessage = 4

// inputTokens estimates the prompt: messages and tool definitions.
func (c counter) inputTokens(msgs []llms.MessageContent, tools []llms.Tool) int {
	n := 3
	for _, m := range msgs {
		n += perMessage
		for _, p := range m.Parts {
			n += c.count(partText(p))
		}
	}
	for _, t := range tools {
		if t.Function == nil {
			continue
		}
		b, _ := json.Marshal(t.Function)
		n += c.count(string(b))
	}
	return n
}

// outputTokens estimates an answer: its text and tool calls.
func (c counter) outputTokens(ch *llms.ContentChoice) int {
	n := c.count(ch.Content)
	for _, tc := range ch.ToolCalls {
		if tc.FunctionCall != nil {
			n += c.count(tc.FunctionCall.Name) + c.count(tc.FunctionCall.Arguments) + 3
		}
	}
	return n
}

func partText(p llms.ContentPart) string {
	switch p := p.(type) {
	case llms.TextContent:
		return p.Text
	case llms.ToolCall:
		if p.FunctionCall != nil {
			return p.FunctionCall.Name + " " + p.FunctionCall.Arguments
		}
	case llms.ToolCallResponse:
		return p.Content
	case llms.CachedContent:
		return partText(p.ContentPart)
	}
	return ""
}
