package modelname_test

import (
	"go/build"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/builtin/models/modelname"
)

func TestNormalize(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{in: "", want: modelname.Inherit},
		{in: "  INHERIT ", want: modelname.Inherit},
		{in: "offline", want: modelname.Offline},
		{in: "Sonnet", want: "anthropic:claude-sonnet-4-5"},
		{in: "claude-sonnet-4-20250514", want: "anthropic:claude-sonnet-4-20250514"},
		{in: "openai:gpt-4o-mini", want: "openai:gpt-4o-mini"},
		{in: "openai:", err: `model "openai:": write provider:model, for example`},
		{in: "open ai:gpt", err: `model "open ai:gpt": write provider:model`},
		{in: "claude sonnet", err: `model "claude sonnet": write provider:model (for example openai:claude sonnet), a short name (haiku, opus, sonnet), or inherit`},
		{in: "gpt-4o", err: `model "gpt-4o": write provider:model; did you mean openai:gpt-4o?`},
		{in: "gemini-2.5-flash", err: `model "gemini-2.5-flash": write provider:model; did you mean googleai:gemini-2.5-flash?`},
		{in: "llama3", err: `model "llama3": write provider:model (for example openai:llama3)`},
	}
	for _, tt := range tests {
		got, err := modelname.Normalize(tt.in)
		if tt.err != "" {
			require.Error(t, err, tt.in)
			assert.Contains(t, err.Error(), tt.err, tt.in)
			assert.Empty(t, got, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
}

// Every short name stands for a provider:model that Normalize keeps as
// it is, so a name and what it stands for mean one model.
func TestAliasesStandForProviderModels(t *testing.T) {
	aliases := modelname.Aliases()
	require.NotEmpty(t, aliases)
	for short, full := range aliases {
		got, err := modelname.Normalize(full)
		require.NoError(t, err, short)
		assert.Equal(t, full, got, short)
	}
}

func TestAliasesIsTheCallersCopy(t *testing.T) {
	modelname.Aliases()["sonnet"] = "openai:gpt-4o-mini"
	assert.Equal(t, "anthropic:claude-sonnet-4-5", modelname.Aliases()["sonnet"])
}

// Agent definitions, providers and the command line all import this
// package, so it must import nothing of troupe's.
func TestImportsNothingOfTroupe(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	require.NoError(t, err)
	for _, imp := range pkg.Imports {
		require.False(t, strings.HasPrefix(imp, "github.com/troupe-dev/troupe/"), "modelname imports %s", imp)
	}
}

func TestQualify(t *testing.T) {
	for in, want := range map[string]string{
		"gpt-4o":            "openai:gpt-4o",
		"GPT-4.1-mini":      "openai:GPT-4.1-mini",
		"o1":                "openai:o1",
		"o3-mini":           "openai:o3-mini",
		"o4-mini":           "openai:o4-mini",
		"claude-opus-4-1":   "anthropic:claude-opus-4-1",
		"gemini-2.5-flash":  "googleai:gemini-2.5-flash",
		"openai:gpt-4o":     "",
		"llama3":            "",
		"o10":               "",
		"gptx":              "",
		"":                  "",
		"gpt-4o with space": "",
	} {
		assert.Equal(t, want, modelname.Qualify(in), in)
	}
}
