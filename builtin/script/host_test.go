package script

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

const badHooks = `package hooks

import "troupe"

func deep(n int) int { return deep(n+1) + 1 }

func Prompt(task troupe.Task) (string, error) {
	switch task.Prompt {
	case "loop":
		for {
		}
	case "recurse":
		deep(0)
	case "alloc":
		b := make([]byte, 4<<30)
		return string(b[len(b)-1:]), nil
	case "goroutines":
		for i := 0; i < 10000; i++ {
			go func() { select {} }()
		}
	case "panic":
		panic("boom")
	case "passwd":
		return troupe.ReadFile("/etc/passwd")
	}
	return "fine: " + task.Prompt, nil
}
`

func compileHooks(t *testing.T, h *Host, src string) *agenttypes.Hooks {
	t.Helper()
	hooks, diags := h.Compile(context.Background(), "t", &agenttypes.Scripts{Hooks: &agenttypes.Script{Source: src, File: "t.yaml", Line: 1}})
	require.Empty(t, diags)
	return hooks
}

// Every hostile call fails with ErrScript and a message saying what
// happened; the same Host then serves a good call from a fresh process.
//
// Only the endless loop meets a short per-call limit: under the race
// detector on a loaded machine, recursing down to the stack's limit can
// take longer than that, and would then be reported as a loop.
func TestHostileCallsFailAndTheHostRestarts(t *testing.T) {
	short := New(Options{CallTimeout: 2 * time.Second})
	defer short.Close()
	long := New(Options{CallTimeout: time.Minute})
	defer long.Close()
	shortHooks, longHooks := compileHooks(t, short, badHooks), compileHooks(t, long, badHooks)
	root := t.TempDir()
	ctx := agenttypes.WithEnv(context.Background(), &agenttypes.Env{Dir: root, Note: func(string) {}})
	for task, want := range map[string]string{
		"loop":       "per-call limit",
		"recurse":    "overflowed its stack",
		"alloc":      "memory",
		"goroutines": "goroutines",
		"panic":      "panicked: boom",
	} {
		hooks := longHooks
		if task == "loop" {
			hooks = shortHooks
		}
		_, err := hooks.Prompt(ctx, agenttypes.ScriptTask{Prompt: task})
		require.ErrorIs(t, err, agenttypes.ErrScript, task)
		assert.Contains(t, err.Error(), want, task)
		out, err := hooks.Prompt(ctx, agenttypes.ScriptTask{Prompt: "after " + task})
		require.NoError(t, err, task)
		assert.Equal(t, "fine: after "+task, out)
	}
	_, err := longHooks.Prompt(ctx, agenttypes.ScriptTask{Prompt: "passwd"})
	require.Error(t, err)
	assert.NotErrorIs(t, err, agenttypes.ErrScript, "the hook answered: ReadFile refused the path")
	assert.Contains(t, err.Error(), "outside")
}

// In process, a loop is stopped by its context and the interpreter is
// dropped; the next call gets a fresh one.
func TestInProcessLoopIsStoppedByItsContext(t *testing.T) {
	h := New(Options{AllInProcess: true})
	defer h.Close()
	hooks := compileHooks(t, h, badHooks)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := hooks.Prompt(ctx, agenttypes.ScriptTask{Prompt: "loop"})
	require.ErrorIs(t, err, agenttypes.ErrScript)
	assert.Contains(t, err.Error(), "time budget")
	out, err := hooks.Prompt(context.Background(), agenttypes.ScriptTask{Prompt: "x"})
	require.NoError(t, err)
	assert.Equal(t, "fine: x", out)
}

const toolSrc = `package hooks

func Run(args map[string]any) (string, error) { s, _ := args["s"].(string); return s + "!", nil }
`

func benchHooks(b *testing.B, inProcess bool) (*agenttypes.Hooks, func()) {
	h := New(Options{AllInProcess: inProcess})
	hooks, diags := h.Compile(context.Background(), "b", &agenttypes.Scripts{
		Hooks: &agenttypes.Script{Source: goodHooks, File: "b.yaml", Line: 1},
		Tools: []agenttypes.ScriptTool{{Name: "echo", Description: "echo", Script: agenttypes.Script{Source: toolSrc, File: "b.yaml", Line: 1}}},
	})
	require.Empty(b, diags)
	return hooks, func() { h.Close() }
}

// latencies keeps the duration of each call of a benchmark and reports
// their median and 99th percentile, which say more than the mean when a
// few calls wait on the scheduler or a collection.
type latencies []time.Duration

func (l *latencies) time(f func()) {
	start := time.Now()
	f()
	*l = append(*l, time.Since(start))
}

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	b.ReportMetric(float64(l[len(l)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(l[len(l)*99/100].Nanoseconds()), "p99-ns")
}

func benchmarkHook(b *testing.B, inProcess bool) {
	hooks, done := benchHooks(b, inProcess)
	defer done()
	ctx := context.Background()
	var lat latencies
	for b.Loop() {
		lat.time(func() {
			if _, err := hooks.Prompt(ctx, agenttypes.ScriptTask{Prompt: "abc"}); err != nil {
				b.Fatal(err)
			}
		})
	}
	lat.report(b)
}

func benchmarkTool(b *testing.B, inProcess bool) {
	hooks, done := benchHooks(b, inProcess)
	defer done()
	ctx := context.Background()
	args := json.RawMessage(`{"s":"hi"}`)
	var lat latencies
	for b.Loop() {
		lat.time(func() {
			if _, err := hooks.Tools[0].Call(ctx, args); err != nil {
				b.Fatal(err)
			}
		})
	}
	lat.report(b)
}

func BenchmarkHookInProcess(b *testing.B)    { benchmarkHook(b, true) }
func BenchmarkHookOutOfProcess(b *testing.B) { benchmarkHook(b, false) }
func BenchmarkToolInProcess(b *testing.B)    { benchmarkTool(b, true) }
func BenchmarkToolOutOfProcess(b *testing.B) { benchmarkTool(b, false) }

// A script that burns CPU is ended by the kernel's count of its CPU time,
// well before a long per-call limit of wall time.
func TestACallIsEndedWhenItUsesItsCPUTime(t *testing.T) {
	h := New(Options{CallTimeout: time.Minute, Child: ChildOptions{CPUTime: time.Second}})
	defer h.Close()
	hooks := compileHooks(t, h, badHooks)
	ctx := agenttypes.WithEnv(context.Background(), &agenttypes.Env{Dir: t.TempDir(), Note: func(string) {}})
	_, err := hooks.Prompt(ctx, agenttypes.ScriptTask{Prompt: "loop"})
	require.ErrorIs(t, err, agenttypes.ErrScript)
	assert.Contains(t, err.Error(), "used more than 1s of CPU time")
	out, err := hooks.Prompt(ctx, agenttypes.ScriptTask{Prompt: "after"})
	require.NoError(t, err)
	assert.Equal(t, "fine: after", out, "the next call gets a fresh script host")
}

const deepHooks = `package hooks

import (
	"strconv"
	"troupe"
)

func deep(n int) int {
	if n == 0 {
		return 0
	}
	return deep(n-1) + 1
}

func Prompt(task troupe.Task) (string, error) {
	n, err := strconv.Atoi(task.Prompt)
	if err != nil {
		return "", err
	}
	return "reached " + strconv.Itoa(deep(n)), nil
}
`

// A recursion that fits in the default stack fails in a script host whose
// stack the operator capped below it, and is said to have overflowed.
func TestChildStackLimitIsTheOperators(t *testing.T) {
	const depth = "20000" // some MiB of stack: more than 4, far less than the default 64
	ctx := agenttypes.WithEnv(context.Background(), &agenttypes.Env{Dir: t.TempDir(), Note: func(string) {}})

	roomy := New(Options{CallTimeout: time.Minute})
	defer roomy.Close()
	out, err := compileHooks(t, roomy, deepHooks).Prompt(ctx, agenttypes.ScriptTask{Prompt: depth})
	require.NoError(t, err)
	assert.Equal(t, "reached "+depth, out)

	capped := New(Options{CallTimeout: time.Minute, Child: ChildOptions{StackLimit: 4 << 20}})
	defer capped.Close()
	_, err = compileHooks(t, capped, deepHooks).Prompt(ctx, agenttypes.ScriptTask{Prompt: depth})
	require.ErrorIs(t, err, agenttypes.ErrScript)
	assert.Contains(t, err.Error(), "overflowed its stack")
}
