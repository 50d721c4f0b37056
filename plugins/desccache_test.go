package plugins_test

import (
	"os"
	"path/filepath"
	"syscall"
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

// cacheOnce loads the plugins of dir with a host that keeps their
// descriptions in cache, and returns the cache's files.
func cacheOnce(t *testing.T, dir, cache string) []string {
	t.Helper()
	first, _ := newHost(t, plugins.Config{CacheDir: cache}, dir)
	loaded(t, first)
	require.NoError(t, first.Close())
	files, err := filepath.Glob(filepath.Join(cache, "*.pb"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	return files
}

func TestADescriptionCacheThatCannotBeReadIsPassedOver(t *testing.T) {
	for name, spoil := range map[string]func(path string) error{
		"garbage":    func(p string) error { return os.WriteFile(p, []byte("not a description"), 0o600) },
		"named pipe": func(p string) error { _ = os.Remove(p); return syscall.Mkfifo(p, 0o600) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			copyPlugin(t, dir, "test")
			cache := t.TempDir()
			files := cacheOnce(t, dir, cache)
			require.NoError(t, spoil(files[0]))

			h, _ := newHost(t, plugins.Config{CacheDir: cache}, dir)
			reg := loaded(t, h)
			_, err := reg.Type("looper")
			require.NoError(t, err, "the plugin describes itself instead")
			assert.NotZero(t, h.PID("test"))
		})
	}
}

func TestARebuiltPluginDescribesItselfAgain(t *testing.T) {
	dir := t.TempDir()
	bin := copyPlugin(t, dir, "test")
	cache := t.TempDir()
	cacheOnce(t, dir, cache)
	later := time.Now().Add(time.Minute)
	require.NoError(t, os.Chtimes(bin, later, later), "a new build of the same size")

	h, _ := newHost(t, plugins.Config{CacheDir: cache}, dir)
	loaded(t, h)
	assert.NotZero(t, h.PID("test"), "a binary the cache has not seen is started to describe itself")
}

func TestALockedOutPluginGetsNothingFromTheCache(t *testing.T) {
	dir := t.TempDir()
	bin := copyPlugin(t, dir, "test")
	cache := t.TempDir()
	cacheOnce(t, dir, cache)

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
