package offline

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestExtractTerms(t *testing.T) {
	tests := []struct {
		name string
		task string
		want []string
	}{
		{"capitalised name", "Where is Spawn handled?", []string{"Spawn"}},
		{"question words only", "Where is it done? How is this handled?", []string{}},
		{"empty", "", []string{}},
		{"camelCase with parts", "where is parseConfig called from the CLI",
			[]string{"parseConfig", "CLI", "config", "parse"}},
		{"snake_case with parts", "what sets max_tool_calls",
			[]string{"max_tool_calls", "sets", "tool"}}, // "calls" is a stop word
		{"acronym inside camelCase", "how is parseHTTPResponse done",
			[]string{"parseHTTPResponse", "response", "parse", "http"}},
		{"plain words, longer first", "How is the token budget enforced in the manager loop?",
			[]string{"budget", "enforc", "token", "manag", "loop"}},
		{"double-quoted phrase kept whole", `where does "budget exceeded" come from`,
			[]string{"budget exceeded"}},
		{"backticked identifier", "what does `ErrUnknownType` mean",
			[]string{"ErrUnknownType", "unknown", "type"}},
		{"quoted stop word kept", "where is `where` used", []string{"where"}},
		{"single quotes but not apostrophes", "Don't touch 'max_tokens' here",
			[]string{"max_tokens", "touch", "tokens"}},
		{"capitalised stop word mid-sentence is an identifier", "who closes the Done channel",
			[]string{"Done", "channel", "clos"}},
		{"sentence start is not a name", "Budget? Spawn checks it.",
			[]string{"budget", "spawn", "check"}},
		{"dotted, paths and file names", "see manager.Spawn in builtin/offline and config.yaml",
			[]string{"builtin/offline", "manager.Spawn", "config.yaml", "manager", "builtin", "offline", "config", "spawn", "yaml"}},
		{"abbreviations and numbers dropped", "e.g. 42 or 3.14, i.e. nothing", []string{}},
		{"duplicates once, strongest kind", "spawn or Spawn or `spawn`", []string{"spawn"}},
		{"unicode", "wo wird Größe berechnet", []string{"Größe", "berechnet", "wird"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ExtractTerms(tt.task)
			if len(tt.want) == 0 {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestSplitIdent(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"parseConfig", []string{"parse", "Config"}},
		{"XMLHttpRequest", []string{"XML", "Http", "Request"}},
		{"max_tool_calls", []string{"max", "tool", "calls"}},
		{"utf8Decode", []string{"utf8", "Decode"}},
		{"Spawn", []string{"Spawn"}},
		{"HTTP", []string{"HTTP"}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, splitIdent(tt.in), tt.in)
	}
}
