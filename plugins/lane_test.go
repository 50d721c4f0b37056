package plugins_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/plugins"
	"github.com/troupe-dev/troupe/sdk/wire"
)

// Calls in flight at once each cross on a socket of their own, and each
// gets its own answer.
func TestConcurrentCallsOnTheLaneEachGetTheirOwnAnswer(t *testing.T) {
	h, _ := newHost(t, plugins.Config{}, pluginDir(t, "test"))
	reg := loaded(t, h)
	require.True(t, plugins.UsesLane(h, "test"))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 25 {
				agent := fmt.Sprintf("agent-%d-%d", g, i)
				ctx := agenttypes.WithEnv(ctxTimeout(t, 20*time.Second), &agenttypes.Env{AgentID: agent})
				out, err := callTool(ctx, t, reg, "shout", fmt.Sprintf(`{"text":"t%d"}`, i))
				if !assert.NoError(t, err) {
					return
				}
				assert.Equal(t, fmt.Sprintf("T%d from %s", i, agent), out)
			}
		})
	}
	wg.Wait()
}

// Neither the lane's descriptor nor its variable reaches a process that
// a plugin's tool starts.
func TestTheLaneIsNotPassedOnToWhatAToolStarts(t *testing.T) {
	h, _ := newHost(t, plugins.Config{}, pluginDir(t, "test"))
	reg := loaded(t, h)
	require.True(t, plugins.UsesLane(h, "test"))
	env, err := callTool(ctxTimeout(t, 10*time.Second), t, reg, "env", `{}`)
	require.NoError(t, err)
	assert.NotContains(t, env, wire.EnvLaneFD)

	out, err := callTool(ctxTimeout(t, 10*time.Second), t, reg, "spawn", `{}`)
	require.NoError(t, err)
	pid, err := strconv.Atoi(out)
	require.NoError(t, err)
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	require.NoError(t, err)
	for _, fd := range fds {
		target, _ := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
		assert.False(t, strings.HasPrefix(target, "socket:"), "descriptor %s of the tool's process is %s", fd.Name(), target)
	}
}
