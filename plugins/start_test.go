package plugins_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/plugins"
)

// gate holds the test plugin's start (TESTPLUGIN_GATE) until the test
// lets it go: on one FIFO each start says it is waiting, on the other the
// test answers.
type gate struct {
	ready *fifo
	g     *fifo
}

// newGate makes a gate; the test closes it (g.close) once no start is to
// be held any more.
func newGate(t *testing.T) *gate {
	t.Helper()
	g := newFIFO(t, "gate")
	ready := &fifo{path: g.path + ".ready"}
	require.NoError(t, syscall.Mkfifo(ready.path, 0o600))
	f, err := os.OpenFile(ready.path, os.O_RDWR, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	ready.f, ready.lines = f, bufio.NewReader(f)
	return &gate{ready: ready, g: g}
}

func (g *gate) env() string { return "TESTPLUGIN_GATE=" + g.g.path }

// held waits for a start of the plugin to reach the gate and returns the
// plugin's process ID.
func (g *gate) held(t *testing.T) int {
	t.Helper()
	return g.ready.pid(t, 20*time.Second)
}

// open lets one held start serve.
func (g *gate) open(t *testing.T) {
	t.Helper()
	_, err := g.g.f.Write([]byte{'g'})
	require.NoError(t, err)
}

// fail makes one held start exit.
func (g *gate) fail(t *testing.T) {
	t.Helper()
	_, err := g.g.f.Write([]byte{'x'})
	require.NoError(t, err)
}

// close lets every start that is held or comes later serve.
func (g *gate) close() {
	_ = g.g.f.Close()
	_ = g.ready.f.Close()
}

// gatedHost is a host whose plugin, test, starts at the first call (its
// description comes from a cache filled by another host) and is held at
// g on each start. The gate is closed before the host when the test ends.
func gatedHost(t *testing.T, cfg plugins.Config) (*plugins.Host, *agenttypes.Registry, *gate, string) {
	t.Helper()
	dir := t.TempDir()
	bin := copyPlugin(t, dir, "test")
	cfg.CacheDir = t.TempDir()
	first, _ := newHost(t, plugins.Config{CacheDir: cfg.CacheDir}, dir)
	loaded(t, first)
	require.NoError(t, first.Close())

	g := newGate(t)
	cfg.Env = append(cfg.Env, g.env())
	h, _ := newHost(t, cfg, dir)
	t.Cleanup(g.close)
	reg := loaded(t, h)
	require.Zero(t, h.PID("test"), "the description came from the cache: nothing started yet")
	return h, reg, g, bin
}

type callResult struct {
	out string
	err error
}

// call calls the tool on a goroutine of its own.
func call(ctx context.Context, t *testing.T, reg *agenttypes.Registry, name string) <-chan callResult {
	t.Helper()
	tool, err := reg.Tool(name)
	require.NoError(t, err)
	done := make(chan callResult, 1)
	go func() {
		out, err := tool.Call(ctx, json.RawMessage(`{}`))
		done <- callResult{out, err}
	}()
	return done
}

// within returns what done yields, failing the test if that takes longer
// than d.
func within(t *testing.T, done <-chan callResult, d time.Duration, what string) callResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(d):
		t.Fatalf("%s: still waiting after %s", what, d)
		return callResult{}
	}
}

// A caller whose context ends while its plugin starts leaves at once with
// its context's error, even the caller whose call started it; the start
// goes on for the callers that come after, and the host answers
// meanwhile.
func TestACallerWhoseContextEndsLeavesAPluginsStartAtOnce(t *testing.T) {
	h, reg, g, bin := gatedHost(t, plugins.Config{StartTimeout: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	starter := call(ctx, t, reg, "pid")
	pid := g.held(t)
	cancel()
	r := within(t, starter, 5*time.Second, "a cancelled caller")
	require.ErrorIs(t, r.err, context.Canceled)
	assert.Zero(t, h.PID("test"), "nothing runs yet, and the host says so while the start is in flight")

	waiter := call(ctxTimeout(t, time.Minute), t, reg, "pid")
	g.open(t)
	r = within(t, waiter, 20*time.Second, "a caller after the cancelled one")
	require.NoError(t, r.err)
	assert.Equal(t, strconv.Itoa(pid), r.out, "the start went on, and its process serves")
	assert.NotZero(t, h.PID("test"))

	require.NoError(t, h.Close())
	assert.True(t, waitGone(pid, 5*time.Second), "the plugin outlived Close")
	assert.Empty(t, running(bin))
}

// A start that fails is the error of every caller that waited on it, and
// the next call starts the plugin again.
func TestAStartThatFailsFailsEveryWaiterAndTheNextCallStartsAgain(t *testing.T) {
	h, reg, g, _ := gatedHost(t, plugins.Config{StartTimeout: time.Minute})
	ctx := ctxTimeout(t, time.Minute)
	calls := []<-chan callResult{call(ctx, t, reg, "pid")}
	first := g.held(t)
	calls = append(calls, call(ctx, t, reg, "pid"), call(ctx, t, reg, "shout"))
	require.Eventually(t, func() bool { return plugins.StartWaiters(h, "test") == 3 }, 10*time.Second, time.Millisecond,
		"the later callers wait on the start in flight")
	g.fail(t)
	for i, c := range calls {
		r := within(t, c, 20*time.Second, "a caller of a failed start")
		require.ErrorIs(t, r.err, plugins.ErrStart, "caller %d", i)
		assert.Contains(t, r.err.Error(), "plugin test", "caller %d", i)
	}
	assert.True(t, waitGone(first, 5*time.Second), "the failed start's process is gone")

	next := call(ctx, t, reg, "pid")
	again := g.held(t)
	assert.NotEqual(t, first, again)
	g.open(t)
	r := within(t, next, 20*time.Second, "the call after a failed start")
	require.NoError(t, r.err)
	assert.Equal(t, strconv.Itoa(again), r.out)
}

// Close ends a start in flight at once: its callers learn the host is
// closed, and no process is left.
func TestCloseEndsAStartInFlight(t *testing.T) {
	h, reg, g, bin := gatedHost(t, plugins.Config{StartTimeout: time.Minute})
	waiter := call(ctxTimeout(t, time.Minute), t, reg, "pid")
	pid := g.held(t)
	closed := make(chan error, 1)
	go func() { closed <- h.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Close waits for a plugin's start")
	}
	r := within(t, waiter, 5*time.Second, "a caller of a start that Close ended")
	require.ErrorIs(t, r.err, plugins.ErrClosed)
	assert.False(t, alive(pid), "Close returned before the plugin was gone")
	assert.Empty(t, running(bin))
}

// A tool of a plugin that a Load dropped (its binary changed) still starts
// its process on use, until the host closes: then it is refused, and
// nothing starts.
func TestAToolOfADroppedPluginStartsNothingAfterClose(t *testing.T) {
	dir := t.TempDir()
	bin := copyPlugin(t, dir, "test")
	h, _ := newHost(t, plugins.Config{}, dir)
	reg := loaded(t, h)
	tool, err := reg.Tool("pid")
	require.NoError(t, err)
	data, err := os.ReadFile(bin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bin+".new", append(data, "rebuilt"...), 0o755))
	require.NoError(t, os.Rename(bin+".new", bin))
	require.Empty(t, h.Load(ctxTimeout(t, 20*time.Second), agenttypes.NewRegistry()), "the new binary replaces the old")

	_, err = tool.Call(ctxTimeout(t, 10*time.Second), json.RawMessage(`{}`))
	require.NoError(t, err, "the old binary's tool starts its process again")
	require.NoError(t, h.Close())
	_, err = tool.Call(ctxTimeout(t, 10*time.Second), json.RawMessage(`{}`))
	require.ErrorIs(t, err, plugins.ErrClosed)
	assert.Empty(t, running(bin))
}
