package modelname

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Inherit is the model value that means "the parent's model".
const Inherit = "inherit"

// Offline is the name of the embedded offline retrieval model, as in
// `--model offline`.
const Offline = "offline"

// aliases maps the short model names Claude Code uses onto troupe's
// provider:model names.
var aliases = map[string]string{
	"sonnet": "anthropic:claude-sonnet-4-5",
	"opus":   "anthropic:claude-opus-4-1",
	"haiku":  "anthropic:claude-haiku-4-5",
}

// Aliases returns the short model names a definition may use and the
// provider:model each stands for. Model resolution starts from the same
// table, so a short name means the same model everywhere. The map is the
// caller's to change.
func Aliases() map[string]string { return maps.Clone(aliases) }

// Normalize turns what an agent definition says its model is into
// troupe's name for it: "" and "inherit" (any case) are Inherit, a short
// name its provider:model, a bare Claude model ("claude-…") an anthropic
// one; provider:model and Offline are kept. Anything else is an error
// that says what to write instead.
func Normalize(raw string) (string, error) {
	m := strings.TrimSpace(raw)
	switch {
	case m == "" || strings.EqualFold(m, Inherit):
		return Inherit, nil
	case m == Offline:
		return m, nil
	}
	if full, found := aliases[strings.ToLower(m)]; found {
		return full, nil
	}
	if provider, name, found := strings.Cut(m, ":"); found {
		if provider == "" || name == "" || strings.ContainsAny(m, " \t\n") {
			return "", fmt.Errorf("model %q: write provider:model, for example anthropic:claude-sonnet-4-5 or openai:gpt-4o-mini", m)
		}
		return m, nil
	}
	if strings.HasPrefix(strings.ToLower(m), "claude-") && !strings.ContainsAny(m, " \t\n") {
		return "anthropic:" + m, nil
	}
	return "", fmt.Errorf("model %q: write provider:model (for example openai:%s), a short name (%s), or %s", m, m, strings.Join(slices.Sorted(maps.Keys(aliases)), ", "), Inherit)
}
