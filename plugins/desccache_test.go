package plugins_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/plugins"
)

func TestAPluginSeenBeforeStartsOnFirstUse(t *testing.T) {
	dir := t.TempDir()
	bin := copyPlugin(t, dir, "test")
	cache := t.TempDir()

	// The first host has never seen the binary: it starts the plugin to
	// learn what it offers, and keeps that.
	first, _ := newHost(t, plugins.Config{CacheDir: cache}, dir)
	loaded(t, first)
	assert.NotZero(t, first.PID("test"), "an unknown plugin is started to describe itself")
	require.NoError(t, first.Close())

	// The next knows it: loading starts nothing, and the first call does.
	next, _ := newHost(t, plugins.Config{CacheDir: cache}, dir)
	reg := loaded(t, next)
	typ, err := reg.Type("looper")
	require.NoError(t, err)
	assert.Equal(t, "plugin:test", typ.Source)
	assert.Zero(t, next.PID("test"), "loading a known plugin starts no process")
	assert.Empty(t, running(bin))
	ctx := agenttypes.WithEnv(ctxTimeout(t, 10*time.Second), &agenttypes.Env{AgentID: "agent-1", Dir: t.TempDir()})
	out, err := callTool(ctx, t, reg, "shout", `{"text":"hi"}`)
	require.NoError(t, err)
	assert.Equal(t, "HI from agent-1", out)
	assert.NotZero(t, next.PID("test"), "the first use starts it")
}

func TestADescriptionCacheThatCannotBeReadIsPassedOver(t *testing.T) {
	dir := t.TempDir()
	bin := copyPlugin(t, dir, "test")
	sum, err := plugins.Checksum(bin)
	require.NoError(t, err)
	cache := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(cache, sum+".pb"), []byte("not a description"), 0o600))

	h, _ := newHost(t, plugins.Config{CacheDir: cache}, dir)
	reg := loaded(t, h)
	_, err = reg.Type("looper")
	require.NoError(t, err, "the plugin describes itself instead")
	assert.NotZero(t, h.PID("test"))
}

func TestALockedOutPluginGetsNothingFromTheCache(t *testing.T) {
	dir := t.TempDir()
	bin := copyPlugin(t, dir, "test")
	cache := t.TempDir()
	first, _ := newHost(t, plugins.Config{CacheDir: cache}, dir)
	loaded(t, first)
	require.NoError(t, first.Close())

	// The project now locks a different checksum: the cached description
	// of the binary on disk is not used, and the plugin never runs.
	lockFile := filepath.Join(t.TempDir(), "plugins.lock")
	require.NoError(t, os.WriteFile(lockFile, []byte(`{"version":1,"plugins":{"test":{"sha256":"`+zeros+`"}}}`), 0o600))
	h, _ := newHost(t, plugins.Config{CacheDir: cache, LockFile: lockFile}, dir)
	reg := agenttypes.NewRegistry()
	problems := h.Load(ctxTimeout(t, 10*time.Second), reg)
	require.Len(t, problems, 1)
	require.ErrorIs(t, problems[0], plugins.ErrChecksum)
	_, err := reg.Type("looper")
	assert.ErrorIs(t, err, agenttypes.ErrUnknownType)
	assert.Empty(t, running(bin))
}

const zeros = "0000000000000000000000000000000000000000000000000000000000000000"
