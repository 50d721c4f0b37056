package plugins

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/troupe-dev/troupe/agenttypes"
	pluginv1 "github.com/troupe-dev/troupe/sdk/wire/proto/troupe/plugin/v1"
)

// received is w as the host reads it off the wire.
func received(t *testing.T, w *pluginv1.Type) agenttypes.Type {
	t.Helper()
	b, err := proto.Marshal(w)
	require.NoError(t, err)
	var got pluginv1.Type
	require.NoError(t, proto.Unmarshal(b, &got))
	p := &proc{bin: Binary{Name: "fix"}}
	return p.typeOf(&got)
}

func TestAPluginTypesWorkspaceRunAndSetupReachTheRegistrysForm(t *testing.T) {
	typ := received(t, &pluginv1.Type{
		Name: "fixer", Description: "Fixes.", Tools: []string{"read", "edit", "run"},
		Budget:    &pluginv1.Budget{MaxTimeMs: 90_000},
		Workspace: agenttypes.WorkspaceWorktree,
		Run:       &pluginv1.RunPolicy{Allow: []string{"go test", "make"}, TimeoutMs: 150_000, Network: true},
		Setup:     []string{"make deps"},
	})
	require.NoError(t, typ.Validate())
	assert.Equal(t, agenttypes.WorkspaceWorktree, typ.Workspace)
	assert.Equal(t, agenttypes.RunPolicy{Allow: []string{"go test", "make"}, Timeout: 150 * time.Second, Network: true}, typ.Run)
	assert.Equal(t, []string{"make deps"}, typ.Setup)
	assert.Equal(t, 90*time.Second, typ.Budget.MaxTime)
	assert.Equal(t, "plugin:fix", typ.Source)

	plain := received(t, &pluginv1.Type{Name: "plain", Description: "Reads.", Tools: []string{"read"}})
	require.NoError(t, plain.Validate())
	assert.Empty(t, plain.Workspace)
	assert.Zero(t, plain.Run, "a plugin built before run policies sends none, and gets the zero policy")
	assert.Empty(t, plain.Setup)
	assert.False(t, plain.NeedsWorkspace())
}

// A millisecond count too large for a Duration saturates rather than
// wrapping round: 2^63/10^6 ms + 1 ms would wrap to a negative duration,
// and a larger count to one that may pass for a short timeout.
func TestAHugeMillisecondCountIsRefusedNotWrapped(t *testing.T) {
	assert.Equal(t, time.Duration(math.MaxInt64), millis(math.MaxInt64))
	assert.Equal(t, time.Duration(math.MinInt64), millis(math.MinInt64))
	assert.Equal(t, 2*time.Second, millis(2000))
	// 18446744073709 ms is 2^64 ns and a few: wrapped, a minute or so.
	var wraps int64 = 18_446_744_073_709 + 60_000
	wrapped := time.Duration(wraps) * time.Millisecond
	require.Positive(t, wrapped)
	require.Less(t, wrapped, agenttypes.MaxRunTimeout, "the count wraps round to a valid timeout when multiplied")
	typ := received(t, &pluginv1.Type{
		Name: "fixer", Description: "Fixes.", Tools: []string{"run"},
		Run: &pluginv1.RunPolicy{Allow: []string{"go test"}, TimeoutMs: wraps},
	})
	err := typ.Validate()
	require.ErrorIs(t, err, agenttypes.ErrInvalid)
	assert.Contains(t, err.Error(), "run.timeout")
}
