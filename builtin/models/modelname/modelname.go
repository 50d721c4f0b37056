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
	if full := Qualify(m); full != "" {
		return "", fmt.Errorf("model %q: write provider:model; did you mean %s?", m, full)
	}
	return "", fmt.Errorf("model %q: write provider:model (for example openai:%s), a short name (%s), or %s", m, m, strings.Join(slices.Sorted(maps.Keys(aliases)), ", "), Inherit)
}

// families are the well-known model families, by the first word of their
// models' names, and the provider that serves each: enough to say, of a
// bare name such as gpt-4o, which provider:model was likely meant. Only
// error messages use it; a bare name is never given a provider silently
// (but claude-, as Claude Code's definitions write it), since a model can
// be served by more than one provider (an OpenAI-compatible server,
// Ollama). Keep it to families whose names are unambiguous.
var families = map[string]string{
	"gpt":    "openai", // gpt-4o, gpt-4.1-mini
	"o1":     "openai", // the reasoning models: o1, o3-mini, o4-mini
	"o3":     "openai",
	"o4":     "openai",
	"claude": "anthropic", // claude-sonnet-4-5
	"gemini": "googleai",  // gemini-2.5-flash
}

// Qualify returns provider:name for a bare model name of a well-known
// family (gpt-4o is openai:gpt-4o), or "" when name has a provider
// already or its family is not one of them. It is a suggestion for an
// error message, not a resolution.
func Qualify(name string) string {
	name = strings.TrimSpace(name)
	if name == "" || strings.ContainsAny(name, ": \t\n") {
		return ""
	}
	family, _, _ := strings.Cut(strings.ToLower(name), "-")
	if provider, ok := families[family]; ok {
		return provider + ":" + name
	}
	return ""
}
