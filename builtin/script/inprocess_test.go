package script

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

// spinHooks loops without a channel in sight, so its calls run on the
// caller's goroutine.
const spinHooks = `package hooks

import "troupe"

func Prompt(task troupe.Task) (string, error) {
	n := 0
	switch task.Prompt {
	case "loop":
		for {
			n++
		}
	case "spin":
		for i := 0; i < 2000000; i++ {
			n++
		}
	}
	return "fine: " + task.Prompt, nil
}
`

// parkHooks waits on a channel nothing sends on: a stop does not end it.
const parkHooks = `package hooks

import "troupe"

func Prompt(task troupe.Task) (string, error) {
	if task.Prompt == "park" {
		ch := make(chan int)
		<-ch
	}
	return "fine: " + task.Prompt, nil
}
`

func TestOnlyChannelsMakeAScriptBlock(t *testing.T) {
	for src, want := range map[string]bool{
		spinHooks: false,
		parkHooks: true,
		"package hooks\nfunc Result(s string) (any, error) { select {} }\n":                                      true,
		"package hooks\nfunc Result(s string) (any, error) { var c chan int; return c, nil }\n":                  true,
		"package hooks\nfunc Result(s string) (any, error) { f(nil); return nil, nil }\nfunc f(c chan<- int) {}": true,
		"package hooks\nfunc Result(s string) (any, error) { go func() {}(); return -1, nil }\n":                 false,
	} {
		c, problems := check(src, KindHooks)
		require.Empty(t, problems, src)
		assert.Equal(t, want, c.blocks, src)
	}
}

// A call of a script that cannot park runs on the caller's goroutine:
// while one runs, no goroutine is added.
func TestInProcessCallStartsNoGoroutine(t *testing.T) {
	r := &InProcess{}
	defer r.Close()
	p := newProgram(KindHooks, spinHooks)
	require.NoError(t, r.Load(context.Background(), p))
	var most atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n := int64(runtime.NumGoroutine()); n > most.Load() {
				most.Store(n)
			}
			runtime.Gosched()
		}
	}()
	time.Sleep(10 * time.Millisecond)
	base := most.Load()
	_, err := r.Call(context.Background(), p, &Call{Fn: "Prompt", Task: &Task{Prompt: "spin"}})
	require.NoError(t, err)
	close(stop)
	<-sampled
	assert.Equal(t, base, most.Load(), "no goroutine ran beside the call")
}

// On the caller's goroutine, a loop is stopped by the per-call limit and
// its interpreter dropped; the next call gets a fresh one.
func TestInProcessLoopIsStoppedByThePerCallLimit(t *testing.T) {
	h := New(Options{AllInProcess: true, CallTimeout: 200 * time.Millisecond})
	defer h.Close()
	hooks := compileHooks(t, h, spinHooks)
	start := time.Now()
	_, err := hooks.Prompt(context.Background(), agenttypes.ScriptTask{Prompt: "loop"})
	require.ErrorIs(t, err, agenttypes.ErrScript)
	assert.Contains(t, err.Error(), "per-call limit of 200ms")
	assert.Less(t, time.Since(start), 5*time.Second)
	out, err := hooks.Prompt(context.Background(), agenttypes.ScriptTask{Prompt: "x"})
	require.NoError(t, err)
	assert.Equal(t, "fine: x", out)
}

// pooled counts the idle interpreters h keeps in process.
func pooled(h *Host) int {
	h.inproc.mu.Lock()
	defer h.inproc.mu.Unlock()
	n := 0
	for _, pool := range h.inproc.pools {
		n += len(pool)
	}
	return n
}

// On the caller's goroutine, a loop is stopped when its context ends: by
// a deadline (the agent's time budget) or a cancellation.
func TestInProcessLoopIsStoppedByItsContextOnTheCallersGoroutine(t *testing.T) {
	h := New(Options{AllInProcess: true})
	defer h.Close()
	hooks := compileHooks(t, h, spinHooks)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := hooks.Prompt(ctx, agenttypes.ScriptTask{Prompt: "loop"})
	require.ErrorIs(t, err, agenttypes.ErrScript)
	assert.Contains(t, err.Error(), "time budget")

	// The stopped interpreter was dropped: a good call compiles the next
	// one, so the cancelled call below goes straight into its loop.
	out, err := hooks.Prompt(context.Background(), agenttypes.ScriptTask{Prompt: "warm"})
	require.NoError(t, err)
	require.Equal(t, "fine: warm", out)
	require.Equal(t, 1, pooled(h), "the good call's interpreter is kept")
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err = hooks.Prompt(ctx, agenttypes.ScriptTask{Prompt: "loop"})
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, pooled(h), "the loop's interpreter was stopped and dropped: the cancellation came during the call, not before it")

	for i := range 20 {
		out, err := hooks.Prompt(context.Background(), agenttypes.ScriptTask{Prompt: fmt.Sprint(i)})
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprint("fine: ", i), out, "a stop meant for an earlier call stops no later one")
	}
}

// TestHelperParkedCall is the child process of
// TestInProcessParkedCallIsLeftBehind: it runs a call that parks in a
// channel operation and prints how it ended. It exits without the leak
// check, since the parked goroutine is left behind on purpose.
func TestHelperParkedCall(t *testing.T) {
	if os.Getenv("TROUPE_TEST_PARKED_CALL") == "" {
		t.Skip("runs only as the child of TestInProcessParkedCallIsLeftBehind")
	}
	h := New(Options{AllInProcess: true})
	hooks := compileHooks(t, h, parkHooks)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := hooks.Prompt(ctx, agenttypes.ScriptTask{Prompt: "park"})
	fmt.Println("error:", err)
	out, err := hooks.Prompt(context.Background(), agenttypes.ScriptTask{Prompt: "x"})
	fmt.Println("next:", out, err)
	os.Exit(0)
}

// A call parked in a channel operation does not notice a stop; its
// caller returns all the same when the context ends, since a script that
// may park runs on a goroutine of its own.
func TestInProcessParkedCallIsLeftBehind(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperParkedCall$")
	cmd.Env = append(os.Environ(), "TROUPE_TEST_PARKED_CALL=1")
	done := make(chan struct{})
	var out []byte
	var err error
	go func() {
		out, err = cmd.CombinedOutput()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the parked call held its caller: %s", out)
	}
	require.NoError(t, err, string(out))
	text := string(out)
	assert.Contains(t, text, "error: script failed: Prompt ran past the agent's time budget and was stopped")
	assert.True(t, strings.Contains(text, "next: fine: x <nil>"), text)
}

// A load whose context has already ended runs none of the script, and
// says why. The interpreter is never stopped while it compiles: a stop
// then races with the compiler.
func TestLoadWithAnEndedContextStopsBeforeTheScriptRuns(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := &InProcess{Timeout: time.Minute}
	defer r.Close()
	err := r.Load(ctx, newProgram(KindHooks, spinHooks))
	require.ErrorIs(t, err, context.Canceled)
}

// Top-level declarations that loop are stopped by the per-call limit.
func TestTopLevelLoopIsStoppedByThePerCallLimit(t *testing.T) {
	src := "package hooks\n\nimport \"troupe\"\n\nvar n = spin()\n\nfunc spin() int {\n\tfor {\n\t}\n}\n\nfunc Prompt(task troupe.Task) (string, error) { return \"\", nil }\n"
	r := &InProcess{Timeout: 200 * time.Millisecond}
	defer r.Close()
	err := r.Load(context.Background(), newProgram(KindHooks, src))
	require.ErrorIs(t, err, agenttypes.ErrScript)
	assert.Contains(t, err.Error(), "top-level declarations ran past their time")
}
