package agenttypes_test

import (
	"fmt"
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
