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
	assert.Empty(t, socketsOf(t, out), "the tool's process has sockets")
}

// socketsOf are the sockets open in the process whose ID is pid.
func socketsOf(t *testing.T, pid string) []string {
	t.Helper()
	_, err := strconv.Atoi(pid)
	require.NoError(t, err)
	dir := filepath.Join("/proc", pid, "fd")
	fds, err := os.ReadDir(dir)
	require.NoError(t, err)
	var sockets []string
	for _, fd := range fds {
		target, _ := os.Readlink(filepath.Join(dir, fd.Name()))
		if strings.HasPrefix(target, "socket:") {
			sockets = append(sockets, fd.Name()+" -> "+target)
		}
	}
	return sockets
}

// A plugin that does not serve the lane (one built before it, or not
// with the SDK) would leave the lane's descriptor open for every process
// it starts: once its description says it does not serve it, it is
// started without one.
func TestAPluginKnownNotToServeTheLaneIsStartedWithoutOne(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	copyPlugin(t, dir, "test")
	cfg := plugins.Config{CacheDir: cache, Env: []string{"TESTPLUGIN_NO_LANE=1"}}
	first, _ := newHost(t, cfg, dir)
	loaded(t, first)
	require.NoError(t, first.Close())

	next, _ := newHost(t, cfg, dir)
	reg := loaded(t, next)
	out, err := callTool(ctxTimeout(t, 10*time.Second), t, reg, "spawn", `{}`)
	require.NoError(t, err)
	assert.False(t, plugins.UsesLane(next, "test"))
	assert.Empty(t, socketsOf(t, out), "the process the plugin started has sockets")
}
