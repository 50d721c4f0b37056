package builtin_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin"
	"github.com/troupe-dev/troupe/builtin/models"
	"github.com/troupe-dev/troupe/manager"
)

var shop = filepath.Join("..", "testdata", "repos", "shop")

func TestRegister(t *testing.T) {
	reg := agenttypes.NewRegistry()
	require.NoError(t, builtin.Register(reg))
	for _, name := range []string{"explore", "plan", "review", "general"} {
		typ, err := reg.Type(name)
		require.NoError(t, err)
		assert.Equal(t, builtin.Source, typ.Source)
		assert.NotEmpty(t, typ.Prompt, "prompt is embedded")
		assert.Positive(t, typ.Budget.MaxTurns)
		for _, tool := range typ.Tools {
			_, err := reg.Tool(tool)
			assert.NoError(t, err, "type %s allows registered tool %s", name, tool)
		}
	}
	err := builtin.Register(reg)
	assert.ErrorIs(t, err, agenttypes.ErrDuplicate, "registering twice is refused")
}

func newManager(t *testing.T) *manager.Manager {
	t.Helper()
	reg := agenttypes.NewRegistry()
	require.NoError(t, builtin.Register(reg))
	resolver := models.Resolver{Getenv: func(string) string { return "" }}
	mgr, err := manager.New(manager.Config{Registry: reg, Models: resolver, DefaultModel: resolver.Default()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, mgr.Close(context.Background())) })
	return mgr
}

func TestExploreOfflineFindsTheRightFiles(t *testing.T) {
	mgr := newManager(t)
	tests := []struct {
		task, file string
	}{
		{"where is the discount applied?", "cart/cart.go"},
		{"how does ChargeWithRetry back off?", "payment/charge.go"},
		{"where are refunds made?", "payment/refund.go"},
	}
	for _, tt := range tests {
		t.Run(tt.task, func(t *testing.T) {
			a, err := mgr.Spawn(context.Background(), manager.SpawnRequest{Type: "explore", Task: tt.task, Dir: shop})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := a.Wait(ctx)
			require.NoError(t, err)
			require.Equal(t, manager.Completed, res.State, res.Error)
			findings, ok := res.Data.(builtin.Findings)
			require.True(t, ok, "explore's data holds findings, got %T", res.Data)
			require.NotEmpty(t, findings.Findings)
			assert.Equal(t, tt.file, findings.Findings[0].Path)
			b, err := json.Marshal(res)
			require.NoError(t, err)
			assert.Contains(t, string(b), `"findings":[{"path":"`)
		})
	}
}

func TestReasoningTypesRefuseOfflineModel(t *testing.T) {
	mgr := newManager(t)
	for _, name := range []string{"plan", "review", "general"} {
		_, err := mgr.Spawn(context.Background(), manager.SpawnRequest{Type: name, Task: "t", Dir: shop})
		require.ErrorIs(t, err, manager.ErrModel, name)
		assert.Contains(t, err.Error(), "needs a language model", name)
	}
}

func TestNoteTool(t *testing.T) {
	var got []string
	ctx := agenttypes.WithEnv(context.Background(), &agenttypes.Env{Note: func(s string) { got = append(got, s) }})
	out, err := builtin.Note().Call(ctx, json.RawMessage(`{"text":"remember this"}`))
	require.NoError(t, err)
	assert.Equal(t, "noted", out)
	assert.Equal(t, []string{"remember this"}, got)

	_, err = builtin.Note().Call(ctx, json.RawMessage(`{"txt":"typo"}`))
	assert.ErrorContains(t, err, "unknown field")
	_, err = builtin.Note().Call(ctx, json.RawMessage(`{"text":"  "}`))
	assert.ErrorContains(t, err, "empty")
}

func TestDelegationTools(t *testing.T) {
	reg := agenttypes.NewRegistry()
	require.NoError(t, builtin.Register(reg))
	for _, name := range []string{"delegate", "collect", "ask_parent"} {
		_, err := reg.Tool(name)
		assert.NoError(t, err, "%s is registered", name)
	}
	tests := []struct {
		typ       string
		delegates bool
	}{
		{"explore", true},
		{"general", true},
		{"plan", false},
		{"review", false},
	}
	for _, tt := range tests {
		typ, err := reg.Type(tt.typ)
		require.NoError(t, err)
		assert.Equal(t, tt.delegates, slices.Contains(typ.Tools, "delegate"), "%s lists delegate", tt.typ)
		assert.Equal(t, tt.delegates, slices.Contains(typ.Tools, "collect"), "%s lists collect", tt.typ)
		assert.NotContains(t, typ.Tools, "ask_parent", "%s: the manager grants ask_parent to children; no type lists it", tt.typ)
		assert.Equal(t, tt.delegates, strings.Contains(typ.Prompt, "`delegate`"), "%s's prompt says when to delegate", tt.typ)
	}
}
