package plugins_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
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
	"github.com/troupe-dev/troupe/sdk/fault"
	"github.com/troupe-dev/troupe/sdk/wire"
)

func callTool(ctx context.Context, t *testing.T, reg *agenttypes.Registry, name string, args string) (string, error) {
	t.Helper()
	tool, err := reg.Tool(name)
	require.NoError(t, err)
	return tool.Call(ctx, json.RawMessage(args))
}

func loaded(t *testing.T, h *plugins.Host) *agenttypes.Registry {
	t.Helper()
	reg := agenttypes.NewRegistry()
	require.NoError(t, reg.RegisterType(agenttypes.Type{Name: "plain", Description: "builtin", Source: "builtin"}))
	require.Empty(t, h.Load(ctxTimeout(t, 20*time.Second), reg))
	return reg
}

func TestPluginTypesAndToolsAppearInTheRegistry(t *testing.T) {
	h, _ := newHost(t, plugins.Config{}, pluginDir(t, "test"))
	reg := loaded(t, h)
	for _, name := range []string{"looper", "waiter", "plain"} {
		typ, err := reg.Type(name)
		require.NoError(t, err, name)
		assert.Equal(t, "plugin:test", typ.Source)
	}
	plain, _ := reg.Type("plain")
	assert.Equal(t, []string{"builtin"}, plain.Shadows, "the plugin's type hides the builtin one")
	assert.Nil(t, plain.Loop, "a type without its own loop runs in the host's loop")
	looper, _ := reg.Type("looper")
	assert.NotNil(t, looper.Loop)
	assert.Equal(t, []string{"echo", "shout"}, looper.Tools)

	ctx := agenttypes.WithEnv(ctxTimeout(t, 10*time.Second), &agenttypes.Env{AgentID: "agent-1", Dir: t.TempDir()})
	out, err := callTool(ctx, t, reg, "shout", `{"text":"hi"}`)
	require.NoError(t, err)
	assert.Equal(t, "HI from agent-1", out, "the call carries the agent")
}

// Both ways a call crosses: the lane, and gRPC, which a plugin older
// than the lane gets every call over.
func TestDeadlinesAndCancellationCrossTheBoundary(t *testing.T) {
	for _, lane := range []bool{true, false} {
		t.Run(fmt.Sprintf("lane=%v", lane), func(t *testing.T) {
			var env []string
			if !lane {
				env = []string{"TESTPLUGIN_NO_LANE=1"}
			}
			h, _ := newHost(t, plugins.Config{Env: env}, pluginDir(t, "test"))
			reg := loaded(t, h)
			deadlinesAndCancellationCross(t, reg)
			assert.Equal(t, lane, plugins.UsesLane(h, "test"))
		})
	}
}

func deadlinesAndCancellationCross(t *testing.T, reg *agenttypes.Registry) {
	before, err := callTool(ctxTimeout(t, 10*time.Second), t, reg, "pid", `{}`)
	require.NoError(t, err)

	out, err := callTool(ctxTimeout(t, 30*time.Second), t, reg, "deadline", `{}`)
	require.NoError(t, err)
	assert.Equal(t, "30s", out, "the plugin sees the caller's deadline")

	start := time.Now()
	_, err = callTool(ctxTimeout(t, 200*time.Millisecond), t, reg, "block", `{}`)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 2*time.Second)

	ctx, cancel := context.WithCancel(context.Background())
	marker := newFIFO(t, "started")
	go func() {
		if _, err := marker.line(10 * time.Second); err != nil {
			t.Error(err)
		}
		cancel()
	}()
	_, err = callTool(ctx, t, reg, "block", `{"marker":"`+marker.path+`"}`)
	require.ErrorIs(t, err, context.Canceled)

	out, err = callTool(ctxTimeout(t, 10*time.Second), t, reg, "pid", `{}`)
	require.NoError(t, err)
	assert.Equal(t, before, out, "cancelled calls leave the plugin running")
}

func TestAPanicInAToolIsAnErrorAndThePluginSurvives(t *testing.T) {
	h, _ := newHost(t, plugins.Config{}, pluginDir(t, "test"))
	reg := loaded(t, h)
	ctx := ctxTimeout(t, 10*time.Second)
	pid := h.PID("test")

	_, err := callTool(ctx, t, reg, "boom", `{}`)
	require.ErrorIs(t, err, fault.ErrInternal)
	assert.Contains(t, err.Error(), "boom in a tool")
	assert.Contains(t, err.Error(), "main.go", "the stack is in the message")

	out, err := callTool(ctx, t, reg, "shout", `{"text":"still here"}`)
	require.NoError(t, err)
	assert.Equal(t, "STILL HERE from ", out)
	assert.Equal(t, pid, h.PID("test"), "the same process serves on")
}

func TestAPluginKilledMidCallFailsTheCallAndRestarts(t *testing.T) {
	h, logs := newHost(t, plugins.Config{}, pluginDir(t, "test"))
	reg := loaded(t, h)
	pid := h.PID("test")
	require.True(t, alive(pid))
	marker := newFIFO(t, "started")
	go func() {
		if _, err := marker.line(10 * time.Second); err != nil {
			t.Error(err)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}()
	_, err := callTool(ctxTimeout(t, 10*time.Second), t, reg, "block", `{"marker":"`+marker.path+`"}`)
	require.ErrorIs(t, err, agenttypes.ErrPluginExited)
	assert.Contains(t, err.Error(), "signal: killed")

	out, err := callTool(ctxTimeout(t, 10*time.Second), t, reg, "pid", `{}`)
	require.NoError(t, err, "the next use restarts the plugin")
	assert.NotEqual(t, strconv.Itoa(pid), out)
	assert.Contains(t, logs.String(), "plugin exited")
}

func TestAPluginThatKeepsCrashingIsDisabledUntilTheNextLoad(t *testing.T) {
	h, _ := newHost(t, plugins.Config{MaxCrashes: 3, CrashWindow: time.Minute}, pluginDir(t, "test"))
	reg := loaded(t, h)
	ctx := ctxTimeout(t, 20*time.Second)
	var err error
	for i := range 3 {
		pid := h.PID("test")
		require.NotZero(t, pid, "crash %d", i)
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
		require.True(t, waitGone(pid, 2*time.Second))
		require.Eventually(t, func() bool { return h.PID("test") == 0 }, 2*time.Second, 5*time.Millisecond, "the host sees the exit")
		_, err = callTool(ctx, t, reg, "pid", `{}`)
	}
	require.ErrorIs(t, err, plugins.ErrDisabled)
	assert.Contains(t, err.Error(), "crashed 3 times")
	assert.Contains(t, err.Error(), "until troupe restarts")

	require.Empty(t, h.Load(ctx, reg))
	_, err = callTool(ctx, t, reg, "pid", `{}`)
	require.NoError(t, err, "loading again re-enables it")
}

func TestAPluginThatHangsOnStartHitsTheStartTimeout(t *testing.T) {
	dir := t.TempDir()
	bin := copyPlugin(t, dir, "hang")
	hung := newFIFO(t, "hung")
	// Long enough for the plugin to say it hangs before the timeout.
	h, _ := newHost(t, plugins.Config{StartTimeout: time.Second, Env: []string{"TESTPLUGIN_HANG=" + hung.path}}, dir)
	reg := agenttypes.NewRegistry()
	start := time.Now()
	problems := h.Load(ctxTimeout(t, 10*time.Second), reg)
	require.Len(t, problems, 1)
	assert.Contains(t, problems[0].Error(), "plugin hang")
	assert.Contains(t, problems[0].Error(), "timeout")
	assert.Less(t, time.Since(start), 5*time.Second)
	_, err := reg.Type("looper")
	assert.ErrorIs(t, err, agenttypes.ErrUnknownType)
	pid := hung.pid(t, time.Second) // written before it hung, so there already
	assert.True(t, waitGone(pid, 5*time.Second), "the hung process is killed")
	assert.Empty(t, running(bin))
}

func TestACallThatIgnoresCancellationGetsThePluginKilled(t *testing.T) {
	h, _ := newHost(t, plugins.Config{CancelGrace: 300 * time.Millisecond}, pluginDir(t, "test"))
	reg := loaded(t, h)
	pid := h.PID("test")
	start := time.Now()
	_, err := callTool(ctxTimeout(t, 200*time.Millisecond), t, reg, "stubborn", `{}`)
	require.ErrorIs(t, err, context.DeadlineExceeded, "after %s", time.Since(start))
	assert.Less(t, time.Since(start), time.Second, "the caller does not wait for the plugin")
	assert.True(t, waitGone(pid, 2*time.Second), "the plugin exits after the grace period")
	require.Eventually(t, func() bool { return h.PID("test") == 0 }, 2*time.Second, 5*time.Millisecond, "the host sees the exit")
	out, err := callTool(ctxTimeout(t, 10*time.Second), t, reg, "pid", `{}`)
	require.NoError(t, err)
	assert.NotEqual(t, strconv.Itoa(pid), out)
}

func TestTheLockFileRefusesChangedAndUnlistedPlugins(t *testing.T) {
	dir := t.TempDir()
	bin := copyPlugin(t, dir, "test")
	lockFile := filepath.Join(t.TempDir(), "plugins.lock")
	bins, problems := plugins.Discover([]plugins.Dir{{Layer: plugins.LayerProject, Path: dir}})
	require.Empty(t, problems)
	lock, err := plugins.WriteLock(lockFile, bins)
	require.NoError(t, err)
	locked := lock.Plugins["test"].SHA256
	require.Len(t, locked, 64)

	h, _ := newHost(t, plugins.Config{LockFile: lockFile}, dir)
	infos, problems := h.List(ctxTimeout(t, 10*time.Second))
	require.Empty(t, problems)
	require.Len(t, infos, 1)
	assert.Equal(t, plugins.StatusLocked, infos[0].Status)
	assert.Equal(t, "1.2.3", infos[0].Version)
	require.NoError(t, h.Close())

	// Change the binary: it no longer matches.
	f, err := os.OpenFile(bin, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("tampered")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	now, err := plugins.Checksum(bin)
	require.NoError(t, err)

	h2, _ := newHost(t, plugins.Config{LockFile: lockFile}, dir)
	reg := agenttypes.NewRegistry()
	problems = h2.Load(ctxTimeout(t, 10*time.Second), reg)
	require.Len(t, problems, 1)
	require.ErrorIs(t, problems[0], plugins.ErrChecksum)
	msg := problems[0].Error()
	for _, want := range []string{"plugin test", locked, now, "write the lock file again"} {
		assert.Contains(t, msg, want)
	}
	assert.NotContains(t, msg, "WriteLock", "the message reaches the command line, which has no Go functions")
	// The changed binary never ran: what it offers is unknown, and a
	// lookup of any type says it may be the refused plugin's.
	_, err = reg.Type("looper")
	require.ErrorIs(t, err, agenttypes.ErrUnknownType)
	assert.Contains(t, err.Error(), `unknown agent type "looper"`)
	assert.Contains(t, err.Error(), "it may come from plugin test, which was refused, so what it offers is unknown: "+msg)
	assert.Zero(t, h2.PID("test"), "a mismatched plugin never runs")
	assert.Empty(t, running(bin))
	infos, _ = h2.List(ctxTimeout(t, 10*time.Second))
	assert.Equal(t, plugins.StatusMismatch, infos[0].Status)

	// A plugin the lock does not list is refused too.
	copyPlugin(t, dir, "other")
	problems = h2.Load(ctxTimeout(t, 10*time.Second), reg)
	var unlisted []string
	for _, p := range problems {
		require.ErrorIs(t, p, plugins.ErrChecksum)
		if strings.Contains(p.Error(), "not in") {
			unlisted = append(unlisted, p.Error())
		}
	}
	require.Len(t, unlisted, 1)
	assert.Contains(t, unlisted[0], "plugin other")
}

func TestDiscoveryTakesTheFirstOfANameAndSkipsNonExecutables(t *testing.T) {
	project, user := t.TempDir(), t.TempDir()
	copyPlugin(t, project, "test")
	copyPlugin(t, user, "test")
	require.NoError(t, os.WriteFile(filepath.Join(user, plugins.Prefix+"notexec"), []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(user, "README"), []byte("x"), 0o644))
	bins, problems := plugins.Discover([]plugins.Dir{{Layer: plugins.LayerProject, Path: project}, {Layer: plugins.LayerUser, Path: user}, {Layer: plugins.LayerUser, Path: filepath.Join(user, "missing")}})
	require.Len(t, bins, 1)
	assert.Equal(t, plugins.LayerProject, bins[0].Layer)
	assert.Equal(t, []string{filepath.Join(user, plugins.Prefix+"test")}, bins[0].Shadows)
	require.Len(t, problems, 1)
	assert.Contains(t, problems[0].Error(), "chmod +x")

	dirs := plugins.Dirs("/proj", func(k string) string {
		return map[string]string{"TROUPE_PLUGIN_PATH": "/a" + string(os.PathListSeparator) + "/b", "XDG_DATA_HOME": "/data"}[k]
	})
	assert.Equal(t, []plugins.Dir{
		{Layer: plugins.LayerProject, Path: "/proj/.troupe/plugins"},
		{Layer: plugins.LayerPath, Path: "/a"}, {Layer: plugins.LayerPath, Path: "/b"},
		{Layer: plugins.LayerUser, Path: "/data/troupe/plugins"},
	}, dirs)
}

func TestAPluginRunByHandSaysWhatItIs(t *testing.T) {
	cmd := exec.Command(testPlugin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "exits non-zero: %v", err)
	assert.Equal(t, 1, ee.ExitCode())
	assert.Contains(t, string(out), "is a troupe plugin")
	assert.Contains(t, string(out), ".troupe/plugins/")
	assert.Contains(t, string(out), "troupe-plugin-test")
}

func TestPluginLogsGoThroughSlogWithThePluginsName(t *testing.T) {
	h, logs := newHost(t, plugins.Config{}, pluginDir(t, "test"))
	reg := loaded(t, h)
	_, err := callTool(ctxTimeout(t, 10*time.Second), t, reg, "boom", `{}`)
	require.Error(t, err)
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "boom in a tool") }, 5*time.Second, 10*time.Millisecond)
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "msg=panic") {
			assert.Contains(t, line, "plugin=test")
			assert.Contains(t, line, "level=ERROR")
			return
		}
	}
	t.Fatalf("no panic line in the log:\n%s", logs.String())
}

func TestCloseStopsEveryPluginProcess(t *testing.T) {
	h, _ := newHost(t, plugins.Config{}, pluginDir(t, "test"))
	loaded(t, h)
	pid := h.PID("test")
	require.True(t, alive(pid))
	require.NoError(t, h.Close())
	assert.True(t, waitGone(pid, 3*time.Second))
	_, err := h.List(context.Background())
	assert.ErrorIs(t, errors.Join(err...), plugins.ErrClosed)
}

func TestTheSDKImportsNoGRPC(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../sdk").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.NotContains(t, string(out), "google.golang.org/grpc")
	assert.NotContains(t, string(out), "hashicorp/go-plugin")
}

// A plugin built against another version of the protocol is refused at
// the handshake, with an error that says so and what to do, and leaves no
// process behind. The version is the one the plugin's handshake line
// announces, read by the host itself: the refusal does not hang on the
// words of go-plugin's error.
func TestAPluginOfAnotherProtocolVersionIsRefused(t *testing.T) {
	dir := t.TempDir()
	bin := copyPlugin(t, dir, "test")
	h, _ := newHost(t, plugins.Config{Env: []string{"TESTPLUGIN_PROTOCOL=99"}}, dir)
	problems := h.Load(ctxTimeout(t, 20*time.Second), agenttypes.NewRegistry())
	require.Len(t, problems, 1)
	require.ErrorIs(t, problems[0], plugins.ErrStart)
	require.ErrorIs(t, problems[0], plugins.ErrProtocolVersion)
	want := fmt.Sprintf("speaks version 99 of the plugin protocol, and this troupe speaks %d: rebuild it against this troupe's sdk", wire.Version)
	assert.Contains(t, problems[0].Error(), want)
	assert.NotContains(t, problems[0].Error(), "incompatible API version", "the message is troupe's own")
	assert.Empty(t, running(bin), "no process is left")
}

// A plugin the lock file refuses after it ran here is known, from the
// description cache, to offer its types and tools: looking one up names
// the plugin and why it was refused.
func TestARefusedPluginsTypesNameThePlugin(t *testing.T) {
	dir := t.TempDir()
	copyPlugin(t, dir, "test")
	cache := t.TempDir()
	lockFile := filepath.Join(t.TempDir(), "plugins.lock")

	h, _ := newHost(t, plugins.Config{CacheDir: cache}, dir)
	reg := agenttypes.NewRegistry()
	require.Empty(t, h.Load(ctxTimeout(t, 10*time.Second), reg))
	_, err := reg.Type("looper")
	require.NoError(t, err, "with no lock file the plugin runs")
	require.NoError(t, h.Close())

	require.NoError(t, os.WriteFile(lockFile, []byte(`{"version":1,"plugins":{}}`), 0o644))
	h2, _ := newHost(t, plugins.Config{CacheDir: cache, LockFile: lockFile}, dir)
	reg = agenttypes.NewRegistry()
	problems := h2.Load(ctxTimeout(t, 10*time.Second), reg)
	require.Len(t, problems, 1)
	require.ErrorIs(t, problems[0], plugins.ErrChecksum)
	assert.Zero(t, h2.PID("test"), "the refused plugin never runs")

	_, err = reg.Type("looper")
	require.ErrorIs(t, err, agenttypes.ErrUnknownType)
	require.ErrorIs(t, err, plugins.ErrChecksum)
	assert.Equal(t, `type "looper" comes from plugin test, which was refused: `+problems[0].Error(), err.Error())
	_, err = reg.Tool("shout")
	require.ErrorIs(t, err, agenttypes.ErrUnknownTool)
	assert.Equal(t, `tool "shout" comes from plugin test, which was refused: `+problems[0].Error(), err.Error())
	_, err = reg.Type("nosuch")
	require.ErrorIs(t, err, agenttypes.ErrUnknownType)
	assert.NotContains(t, err.Error(), "plugin test", "what the refused plugin offers is known, and this is not of it")
}
