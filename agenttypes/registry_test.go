package agenttypes_test

import (
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

func TestTypeValidate(t *testing.T) {
	tests := []struct {
		name string
		typ  agenttypes.Type
		msg  string
	}{
		{"slash in name", agenttypes.Type{Name: "a/b", Description: "d"}, "no spaces or '/'"},
		{"space in name", agenttypes.Type{Name: "a b", Description: "d"}, "no spaces or '/'"},
		{"empty name", agenttypes.Type{Description: "d"}, "type name"},
		{"no description", agenttypes.Type{Name: "a"}, "no description"},
		{"negative tokens", agenttypes.Type{Name: "a", Description: "d", Budget: agenttypes.Budget{MaxTokens: -1}}, "max tokens"},
		{"negative time", agenttypes.Type{Name: "a", Description: "d", Budget: agenttypes.Budget{MaxTime: -time.Second}}, "max time"},
		{"bad format", agenttypes.Type{Name: "a", Description: "d", Output: agenttypes.Output{Format: "xml"}}, `"text" or "json"`},
		{"bad schema", agenttypes.Type{Name: "a", Description: "d", Output: agenttypes.Output{Format: "json", Schema: []byte("{")}}, "schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.typ.Validate()
			require.ErrorIs(t, err, agenttypes.ErrInvalid)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
	ok := agenttypes.Type{Name: "explore.v2_x-y", Description: "d", Output: agenttypes.Output{Format: "json", Schema: []byte(`{"type":"object"}`)}}
	assert.NoError(t, ok.Validate())
}

func TestRegisteredTypeIsImmutable(t *testing.T) {
	reg := agenttypes.NewRegistry()
	typ := agenttypes.Type{Name: "a", Description: "d", Tools: []string{"read"}}
	require.NoError(t, reg.RegisterType(typ))
	typ.Tools[0] = "write"
	got, err := reg.Type("a")
	require.NoError(t, err)
	assert.Equal(t, []string{"read"}, got.Tools, "changing the caller's copy does not reach the registry")
}

func TestRegistryDuplicatesAndConcurrency(t *testing.T) {
	reg := agenttypes.NewRegistry()
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Go(func() {
			errs[i] = reg.RegisterType(agenttypes.Type{Name: "same", Description: "d", Source: fmt.Sprintf("file%d", i)})
			_, _ = reg.Type("same")
			_ = reg.Types()
		})
	}
	wg.Wait()
	var ok int
	for _, err := range errs {
		if err == nil {
			ok++
		} else {
			assert.ErrorIs(t, err, agenttypes.ErrDuplicate)
			assert.Contains(t, err.Error(), "rename one of them")
		}
	}
	assert.Equal(t, 1, ok, "exactly one registration wins")

	tool := &agenttypes.ToolFunc{ToolSpec: agenttypes.ToolSpec{Name: "t", Description: "d"}}
	require.NoError(t, reg.RegisterTool(tool))
	assert.ErrorIs(t, reg.RegisterTool(tool), agenttypes.ErrDuplicate)
	_, err := reg.Tool("missing")
	assert.ErrorIs(t, err, agenttypes.ErrUnknownTool)
	assert.ErrorIs(t, reg.RegisterTool(&agenttypes.ToolFunc{ToolSpec: agenttypes.ToolSpec{Name: "bad name"}}), agenttypes.ErrInvalid)
}

func TestBudgetMerge(t *testing.T) {
	b := agenttypes.Budget{MaxTurns: 3}.Merge(agenttypes.Budget{MaxTurns: 10, MaxTokens: 100, MaxTime: time.Minute, MaxToolCalls: 7})
	assert.Equal(t, agenttypes.Budget{MaxTurns: 3, MaxTokens: 100, MaxTime: time.Minute, MaxToolCalls: 7}, b)
}

// Within holds each field to the limit's where the limit sets it, fills
// the fields b leaves unset, and leaves alone what the limit does not set.
func TestBudgetWithin(t *testing.T) {
	limit := agenttypes.Budget{MaxTokens: 1000, MaxTime: time.Minute, MaxTurns: 5, MaxCostUSD: 0.5}
	tests := []struct {
		name string
		ask  agenttypes.Budget
		want agenttypes.Budget
	}{
		{"nothing asked takes the limit", agenttypes.Budget{}, limit},
		{"less than the limit is kept", agenttypes.Budget{MaxTokens: 10, MaxTime: time.Second, MaxTurns: 2, MaxCostUSD: 0.1},
			agenttypes.Budget{MaxTokens: 10, MaxTime: time.Second, MaxTurns: 2, MaxCostUSD: 0.1}},
		{"more than the limit is cut", agenttypes.Budget{MaxTokens: 5000, MaxTime: time.Hour, MaxTurns: 50, MaxCostUSD: 9},
			limit},
		{"a field the limit leaves open stays as asked", agenttypes.Budget{MaxToolCalls: 99},
			agenttypes.Budget{MaxTokens: 1000, MaxTime: time.Minute, MaxTurns: 5, MaxCostUSD: 0.5, MaxToolCalls: 99}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.ask.Within(limit))
		})
	}
}

// A name that is not found is answered with what it could have been: the
// nearest name when one is close, else the names there are when they are
// few. The errors speak of types and tools, not of commands to run.
func TestUnknownNamesSayWhatThereIs(t *testing.T) {
	reg := agenttypes.NewRegistry()
	for _, name := range []string{"explore", "plan", "review"} {
		require.NoError(t, reg.RegisterType(agenttypes.Type{Name: name, Description: "d"}))
	}
	for _, name := range []string{"read", "grep"} {
		require.NoError(t, reg.RegisterTool(&agenttypes.ToolFunc{ToolSpec: agenttypes.ToolSpec{Name: name, Description: "d"}}))
	}
	tests := []struct {
		name   string
		lookup func() error
		target error
		want   string
	}{
		{"a type typo", func() error { _, err := reg.Type("exlpore"); return err }, agenttypes.ErrUnknownType,
			`unknown agent type "exlpore"; did you mean "explore"?`},
		{"a type with a different case", func() error { _, err := reg.Type("Plan"); return err }, agenttypes.ErrUnknownType,
			`unknown agent type "Plan"; did you mean "plan"?`},
		{"a type far from any", func() error { _, err := reg.Type("nosuch"); return err }, agenttypes.ErrUnknownType,
			`unknown agent type "nosuch"; the types are explore, plan, review`},
		{"a tool typo", func() error { _, err := reg.Tool("reed"); return err }, agenttypes.ErrUnknownTool,
			`unknown tool "reed"; did you mean "read"?`},
		{"a tool far from any", func() error { _, err := reg.Tool("rm"); return err }, agenttypes.ErrUnknownTool,
			`unknown tool "rm"; the tools are grep, read`},
		{"no types at all", func() error { _, err := agenttypes.NewRegistry().Type("explore"); return err }, agenttypes.ErrUnknownType,
			`unknown agent type "explore"; no types are registered`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.lookup()
			require.ErrorIs(t, err, tt.target)
			assert.Equal(t, tt.want, err.Error())
		})
	}

	many := agenttypes.NewRegistry()
	for i := range 40 {
		require.NoError(t, many.RegisterType(agenttypes.Type{Name: fmt.Sprintf("type-%02d", i), Description: "d"}))
	}
	_, err := many.Type("nosuch")
	require.ErrorIs(t, err, agenttypes.ErrUnknownType)
	assert.Equal(t, `unknown agent type "nosuch"; none of the 40 types has a name close to it`, err.Error(), "a long list is not spelled out")
}

// Library errors and diagnostics say what is wrong with the file or the
// name; the command line adds its own hints.
func TestLibraryMessagesNameNoCommands(t *testing.T) {
	command := regexp.MustCompile(`troupe (types|tools|run|plugins|runs) `)
	src, root := testSources(t)
	layout(t, root, map[string]string{
		"repo/.troupe/agents/a.yaml":      "name: twin\ndescription: One.\n",
		"repo/.troupe/agents/b.yaml":      "name: twin\ndescription: Two.\n",
		"repo/.troupe/agents/broken.yaml": "name: broken\n",
		"repo/.troupe/agents/orphan.yaml": "name: orphan\ndescription: d\nextends: explorer\n",
		"repo/.troupe/agents/empty.yaml":  "name: empty\ndescription: \"\"\n",
	})
	reg := testRegistry(t)
	diags := reg.Reload(src)
	require.True(t, diags.HasErrors())
	var msgs []string
	for _, d := range diags {
		msgs = append(msgs, d.String())
	}
	for _, name := range []string{"twin", "broken", "orphan", "nosuch"} {
		_, err := reg.Type(name)
		require.Error(t, err)
		msgs = append(msgs, err.Error())
	}
	_, err := reg.Tool("nosuch")
	msgs = append(msgs, err.Error())
	for _, m := range msgs {
		assert.NotRegexp(t, command, m)
	}
	_, err = reg.Type("twin")
	assert.ErrorIs(t, err, agenttypes.ErrInvalid)
	assert.Contains(t, err.Error(), `type "twin" is not loaded: it is defined in both `)
	_, err = reg.Type("broken")
	assert.ErrorIs(t, err, agenttypes.ErrInvalid)
	assert.Regexp(t, `type "broken" is not loaded: \S*broken\.yaml has errors`, err.Error())
}
