package plugins_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager/managertest"
	"github.com/troupe-dev/troupe/plugins"
)

// A plugin's loop, across the process boundary, is held to the rules the
// manager's own loop is: the suite every kind of loop runs.
func TestAPluginsLoopKeepsTheRules(t *testing.T) {
	h, _ := newHost(t, plugins.Config{}, pluginDir(t, "test"))
	reg := agenttypes.NewRegistry()
	require.NoError(t, reg.RegisterTool(echoTool()))
	require.Empty(t, h.Load(ctxTimeout(t, 20*time.Second), reg))
	looper, err := reg.Type("looper")
	require.NoError(t, err)
	require.NotNil(t, looper.Loop, "the test plugin's looper brings its own loop")
	managertest.TestLoop(t, looper.Loop)
}
