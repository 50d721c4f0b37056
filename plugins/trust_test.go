package plugins_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/plugins"
)

func TestAPluginGetsNoKeyOfTheHostsEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-host-key")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-host-key")
	t.Setenv("SOME_SERVICE_TOKEN", "token-of-the-host")
	h, _ := newHost(t, plugins.Config{Env: []string{"NAMED_FOR_IT=yes"}}, pluginDir(t, "test"))
	reg := loaded(t, h)
	env, err := callTool(ctxTimeout(t, 10*time.Second), t, reg, "env", `{}`)
	require.NoError(t, err)
	assert.NotContains(t, env, "sk-host-key")
	assert.NotContains(t, env, "sk-ant-host-key")
	assert.NotContains(t, env, "token-of-the-host")
	assert.Contains(t, env, "PATH=", "the allow-list passes")
	assert.Contains(t, env, "NAMED_FOR_IT=yes", "what the host names passes")
}

// projectHost is a host of one plugin directory of the project layer.
func projectHost(t *testing.T, cfg plugins.Config, dir string) *plugins.Host {
	t.Helper()
	cfg.Dirs = []plugins.Dir{{Layer: plugins.LayerProject, Path: dir}}
	h, _ := newHost(t, cfg)
	return h
}

func TestAProjectsPluginRunsOnlyOnceTrusted(t *testing.T) {
	dir := t.TempDir()
	bin := copyPlugin(t, dir, "test")
	sum, err := plugins.Checksum(bin)
	require.NoError(t, err)
	// A lock file that lists it pins it; it is no consent.
	lock := filepath.Join(t.TempDir(), "plugins.lock")
	_, err = plugins.WriteLock(lock, []plugins.Binary{{Name: "test", Path: bin}})
	require.NoError(t, err)

	for name, trust := range map[string]func(string, string) bool{
		"no trust at all":      nil,
		"another binary":       func(_, s string) bool { return s == strings.Repeat("0", 64) },
		"trust refused by all": func(string, string) bool { return false },
	} {
		t.Run(name, func(t *testing.T) {
			h := projectHost(t, plugins.Config{LockFile: lock, TrustProject: trust}, dir)
			reg := agenttypes.NewRegistry()
			problems := h.Load(ctxTimeout(t, 10*time.Second), reg)
			require.Len(t, problems, 1)
			require.ErrorIs(t, problems[0], agenttypes.ErrUntrusted)
			assert.Contains(t, problems[0].Error(), "plugin test")
			_, err := reg.Type("looper")
			assert.ErrorIs(t, err, agenttypes.ErrUnknownType)
			assert.Zero(t, h.PID("test"))
			assert.Empty(t, running(bin), "nothing of it ran")
			infos, _ := h.List(ctxTimeout(t, 10*time.Second))
			require.Len(t, infos, 1)
			assert.Equal(t, plugins.StatusUntrusted, infos[0].Status)
			assert.Equal(t, sum, infos[0].SHA256)
		})
	}

	h := projectHost(t, plugins.Config{LockFile: lock, TrustProject: func(name, s string) bool { return name == "test" && s == sum }}, dir)
	reg := agenttypes.NewRegistry()
	require.Empty(t, h.Load(ctxTimeout(t, 10*time.Second), reg))
	_, err = reg.Type("looper")
	assert.NoError(t, err, "trusted, its types load")
}

// The checksum that trust and the lock file are checked against is the
// checksum of the bytes that run: a binary renamed into place once the
// check is made never runs. The swap happens at the last moment the
// host gives anyone, inside the trust check of the start itself.
func TestABinarySwappedAfterItsCheckNeverRuns(t *testing.T) {
	dir := t.TempDir()
	bin := copyPlugin(t, dir, "test")
	sum, err := plugins.Checksum(bin)
	require.NoError(t, err)
	marker := filepath.Join(t.TempDir(), "swapped-binary-ran")
	impostor := filepath.Join(t.TempDir(), "impostor")
	require.NoError(t, os.WriteFile(impostor, []byte("#!/bin/sh\necho ran > "+marker+"\nexec "+testPlugin+" \"$@\"\n"), 0o755))

	calls := 0
	trust := func(_, s string) bool {
		calls++
		if calls == 2 { // the start's own check: swap now
			assert.NoError(t, os.Rename(impostor, bin))
		}
		return s == sum
	}
	h := projectHost(t, plugins.Config{TrustProject: trust}, dir)
	reg := agenttypes.NewRegistry()
	require.Empty(t, h.Load(ctxTimeout(t, 10*time.Second), reg))
	require.Equal(t, 2, calls, "described once, then checked at the start")
	out, err := callTool(ctxTimeout(t, 10*time.Second), t, reg, "shout", `{"text":"who runs"}`)
	require.NoError(t, err)
	assert.Equal(t, "WHO RUNS from ", out)
	assert.NoFileExists(t, marker, "the swapped-in binary ran")
}

// What a plugin starts ends with it, in its process group or not.
func TestWhatAPluginStartsEndsWithIt(t *testing.T) {
	h, _ := newHost(t, plugins.Config{}, pluginDir(t, "test"))
	reg := loaded(t, h)
	var pids []int
	for _, text := range []string{"", "escape"} {
		out, err := callTool(ctxTimeout(t, 10*time.Second), t, reg, "spawn", `{"text":"`+text+`"}`)
		require.NoError(t, err)
		pid, err := strconv.Atoi(out)
		require.NoError(t, err)
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		require.True(t, alive(pid))
		pids = append(pids, pid)
	}
	require.NoError(t, h.Close())
	assert.True(t, waitGone(pids[0], 5*time.Second), "the plugin's own process outlived it")
	assert.True(t, waitGone(pids[1], 5*time.Second), "the plugin's own process in a session of its own outlived it")
}

// A plugin that never completes its start is stopped whole, and promptly:
// a process it left in its group holding its output open does not hold
// the host, and one it put in a session of its own dies too.
func TestAPluginThatNeverStartsLeavesNothingBehind(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(t.TempDir(), "escaped")
	script := "#!/bin/sh\nsetsid sleep 303 > /dev/null 2>&1 &\necho $! > " + pidFile + "\nsleep 15\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, plugins.Prefix+"stuck"), []byte(script), 0o755))
	// The start times out; first, the script starts its process and says
	// so, which on a loaded machine can take well over half a second, so
	// the bound leaves it ample time (a start that never completes waits
	// for the bound in any case).
	h, _ := newHost(t, plugins.Config{StartTimeout: 3 * time.Second}, dir)
	problems := h.Load(ctxTimeout(t, 30*time.Second), agenttypes.NewRegistry())
	require.Len(t, problems, 1)
	data, err := os.ReadFile(pidFile)
	require.NoError(t, err, "the script started its process")
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	closed := make(chan error, 1)
	go func() { closed <- h.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("closing the host waited on a process the plugin left behind")
	}
	assert.True(t, waitGone(pid, 5*time.Second), "a process in a session of its own outlived a plugin that never started")
}

// A project cannot switch off the user's own plugin by shipping one of the
// same name: untrusted, it yields the name; trusted, it takes it.
func TestAnUntrustedProjectPluginYieldsItsNameToTheUsers(t *testing.T) {
	project := t.TempDir()
	projectBin := copyPlugin(t, project, "test")
	sum, err := plugins.Checksum(projectBin)
	require.NoError(t, err)
	users := pluginDir(t, "test")
	dirs := []plugins.Dir{{Layer: plugins.LayerProject, Path: project}, {Layer: plugins.LayerUser, Path: users}}

	h, _ := newHost(t, plugins.Config{Dirs: dirs})
	reg := agenttypes.NewRegistry()
	require.Empty(t, h.Load(ctxTimeout(t, 10*time.Second), reg))
	infos, _ := h.List(ctxTimeout(t, 10*time.Second))
	require.Len(t, infos, 1)
	assert.Equal(t, filepath.Join(users, plugins.Prefix+"test"), infos[0].Path, "the user's plugin runs")
	assert.Equal(t, []string{projectBin}, infos[0].Shadows)
	assert.Empty(t, running(projectBin))

	trusted, _ := newHost(t, plugins.Config{Dirs: dirs, TrustProject: func(_, s string) bool { return s == sum }})
	infos, _ = trusted.List(ctxTimeout(t, 10*time.Second))
	require.Len(t, infos, 1)
	assert.Equal(t, projectBin, infos[0].Path, "trusted, the project's plugin takes its name")
}
