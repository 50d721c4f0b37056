package models

import "strings"

// DefaultOutputLimit caps the output tokens asked of a model the built-in
// table does not know (a local model, say). Set output_limits in the
// config for such models.
const DefaultOutputLimit = 8192

// outputLimits are the most output tokens each model family accepts in one
// call, by name prefix; the longest matching prefix wins. A manager with a
// token budget asks for all the budget left, which providers refuse above
// these.
var outputLimits = map[string]int{
	"openai:gpt-4o":             16384,
	"openai:chatgpt-4o":         16384,
	"openai:gpt-4.1":            32768,
	"openai:gpt-4-turbo":        4096,
	"openai:gpt-4":              8192,
	"openai:gpt-3.5":            4096,
	"openai:gpt-5":              128000,
	"openai:o1":                 100000,
	"openai:o3":                 100000,
	"openai:o4":                 100000,
	"anthropic:claude-sonnet-4": 64000,
	"anthropic:claude-haiku-4":  64000,
	"anthropic:claude-opus-4":   32000,
	"anthropic:claude-3-7":      64000,
	"anthropic:claude-3-5":      8192,
	"anthropic:claude-3":        4096,
	"googleai:gemini-2.5":       65536,
	"googleai:gemini-2.0":       8192,
	"googleai:gemini-1.5":       8192,
}

// outputLimit is the config's output_limits entry for a full model name,
// else the built-in table's, else DefaultOutputLimit.
func outputLimit(cfg *Config, full string) int {
	if n, ok := cfg.outputLimit(full); ok {
		return n
	}
	best, n := "", DefaultOutputLimit
	for prefix, limit := range outputLimits {
		if strings.HasPrefix(full, prefix) && len(prefix) > len(best) {
			best, n = prefix, limit
		}
	}
	return n
}

// OutputLimit returns the most output tokens one call to the named model
// asks for: the config's output_limits, the built-in table, or
// DefaultOutputLimit.
func (r Resolver) OutputLimit(name string) int { return outputLimit(r.cfg(), r.Expand(name)) }
