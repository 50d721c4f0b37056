package serve

import (
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/troupe-dev/troupe/sdk"
	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// fullType has every field of sdk.Type set.
func fullType() sdk.Type {
	return sdk.Type{
		Name: "fixer", Description: "Fixes the failing test.", Prompt: "You fix {{.Dir}}.",
		Tools: []string{"read", "edit", "run"}, Model: "anthropic:claude",
		Budget:           sdk.Budget{MaxTokens: 1000, MaxTime: 90 * time.Second, MaxToolCalls: 20, MaxTurns: 8, MaxCostUSD: 0.5},
		OutputJSONSchema: json.RawMessage(`{"type":"object"}`), NeedsLanguageModel: true,
		Examples:  []string{"fix TestX"},
		Workspace: sdk.WorkspaceWorktree,
		Run:       sdk.RunPolicy{Allow: []string{"go test", "go mod"}, Timeout: 5 * time.Minute, Network: true},
		Setup:     []string{"go mod download"},
		Loop: sdk.LoopFunc(func(context.Context, sdk.Session, sdk.RunRequest) (*sdk.RunResponse, error) {
			return &sdk.RunResponse{}, nil
		}),
	}
}

// described is the plugin's description of t as the host reads it: built
// by the server, encoded and decoded again.
func described(t *testing.T, typ sdk.Type) *pluginv1.Type {
	t.Helper()
	s, err := newServer(sdk.Plugin{Name: "p", Types: []sdk.Type{typ}}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	d, err := s.Describe(context.Background(), &pluginv1.DescribeRequest{})
	require.NoError(t, err)
	b, err := proto.Marshal(d)
	require.NoError(t, err)
	var got pluginv1.DescribeResponse
	require.NoError(t, proto.Unmarshal(b, &got))
	require.Len(t, got.GetTypes(), 1)
	return got.GetTypes()[0]
}

func TestEveryFieldOfATypeCrossesTheWire(t *testing.T) {
	typ := fullType()
	v := reflect.ValueOf(typ)
	for i := range v.NumField() {
		require.False(t, v.Field(i).IsZero(), "the fixture sets sdk.Type.%s: a new field needs carrying and checking here", v.Type().Field(i).Name)
	}
	w := described(t, typ)
	assert.Equal(t, typ.Name, w.GetName())
	assert.Equal(t, typ.Description, w.GetDescription())
	assert.Equal(t, typ.Prompt, w.GetPrompt())
	assert.Equal(t, typ.Tools, w.GetTools())
	assert.Equal(t, typ.Model, w.GetModel())
	b := w.GetBudget()
	assert.Equal(t, sdk.Budget{
		MaxTokens: int(b.GetMaxTokens()), MaxTime: time.Duration(b.GetMaxTimeMs()) * time.Millisecond,
		MaxToolCalls: int(b.GetMaxToolCalls()), MaxTurns: int(b.GetMaxTurns()), MaxCostUSD: b.GetMaxCostUsd(),
	}, typ.Budget)
	assert.JSONEq(t, string(typ.OutputJSONSchema), string(w.GetOutputJsonSchema()))
	assert.True(t, w.GetNeedsLanguageModel())
	assert.Equal(t, typ.Examples, w.GetExamples())
	assert.True(t, w.GetHasLoop())
	assert.Equal(t, "worktree", w.GetWorkspace())
	assert.Equal(t, []string{"go test", "go mod"}, w.GetRun().GetAllow())
	assert.Equal(t, int64(5*60*1000), w.GetRun().GetTimeoutMs())
	assert.True(t, w.GetRun().GetNetwork())
	assert.Equal(t, []string{"go mod download"}, w.GetSetup())
}

func TestATypeThatSaysNothingOfWorkspacesSendsNothing(t *testing.T) {
	w := described(t, sdk.Type{Name: "plain", Description: "Reads.", Tools: []string{"read"}})
	assert.Empty(t, w.GetWorkspace())
	assert.Empty(t, w.GetRun().GetAllow())
	assert.Zero(t, w.GetRun().GetTimeoutMs(), "0 leaves the timeout to the host")
	assert.False(t, w.GetRun().GetNetwork())
	assert.Empty(t, w.GetSetup())
}

func TestARunTimeoutCrossesInMillisecondsRoundedAwayFromZero(t *testing.T) {
	for d, want := range map[time.Duration]int64{
		0:                                0,
		time.Microsecond:                 1, // not 0, which would mean the host's default
		1500 * time.Microsecond:          2,
		2 * time.Second:                  2000,
		-time.Second:                     -1000, // sent as it is, for the host to refuse
		-time.Microsecond:                -1,    // still refused
		30*time.Minute + time.Nanosecond: 30*60*1000 + 1,
	} {
		assert.Equal(t, want, awayMillis(d), "%s", d)
	}
}
