package modelcap

import "github.com/tmc/langchaingo/llms"

// TokenCounter is implemented by models that count tokens the way their
// provider does. Without it, the manager counts four characters a token.
type TokenCounter interface {
	CountTokens(text string) int
}

// ToolTokenCounter is implemented by models that count the tokens of a
// call's tool definitions otherwise than as their JSON text: the offline
// retrieval model reads none and is charged for none. Without it, the
// manager counts the definitions' JSON as text (TokenCounter, or four
// characters a token).
type ToolTokenCounter interface {
	CountToolTokens(tools []llms.Tool) int
}

// OutputLimiter is implemented by models that know the most output tokens
// one call to them asks for. Under a token budget the manager holds that
// much for a call rather than everything the tree has left, so that the
// tree's other calls may go on at once.
type OutputLimiter interface {
	OutputLimit() int
}

// Pricer is implemented by models that may know their price. Cost is what
// a call with these token counts costs, in USD; known is false when the
// model has no price, and a cost budget then cannot be kept with it.
type Pricer interface {
	Cost(inputTokens, outputTokens int) (usd float64, known bool)
}

// RetrievalOnly is implemented by models that cannot reason, such as the
// offline retrieval model: they answer by finding, not by writing.
type RetrievalOnly interface {
	RetrievalOnly() bool
}

// Price returns m's Pricer when m knows its price.
func Price(m llms.Model) (Pricer, bool) {
	p, ok := m.(Pricer)
	if !ok {
		return nil, false
	}
	_, known := p.Cost(0, 0)
	return p, known
}

// IsRetrievalOnly reports whether m says it cannot reason.
func IsRetrievalOnly(m llms.Model) bool {
	r, ok := m.(RetrievalOnly)
	return ok && r.RetrievalOnly()
}

// GenerationInt reads a count a provider put in a choice's GenerationInfo
// under the first of keys it has, whatever integer or float type it used.
func GenerationInt(info map[string]any, keys ...string) (int, bool) {
	for _, k := range keys {
		switch v := info[k].(type) {
		case int:
			return v, true
		case int32:
			return int(v), true
		case int64:
			return int(v), true
		case float64:
			return int(v), true
		}
	}
	return 0, false
}
