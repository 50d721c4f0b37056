package script

import (
	"fmt"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// watchdog holds a script host process to its limits while a call runs:
// memory, goroutines and the call's CPU time, which it ends the process
// for, saying why on standard error for the host to report.
//
// It looks every watchPeriod while a call runs, and every idlePeriod
// while none does: nothing of a script runs between calls, and each
// call is checked once it returns too (server.handle). A process that
// wakes every few milliseconds whatever it does answers each call later:
// the script hook's round trip took about 115 µs at the median when the
// watchdog woke every 2 ms, and about 92 µs when it woke every 20 ms,
// measured side by side. A call that runs away is seen within an
// idlePeriod, so what it allocates past the limit stays bounded by what
// it can allocate in that time.
//
// The kernel could count the CPU time itself (RLIMIT_CPU, SIGXCPU), but a
// process with a CPU-time limit set answered each call about 15 µs later,
// measured; the watchdog reads the kernel's count instead. It cannot be
// starved by the script: the runtime preempts goroutines that do not
// yield, and the host's per-call wall-time limit stands behind it.
type watchdog struct {
	mem int64         // bytes of heap and stacks
	cpu time.Duration // CPU time of one call; 0: no limit

	calls atomic.Uint64 // calls begun
	busy  atomic.Bool   // a call runs
}

// How often the watchdog looks while a call runs, and while none does.
const (
	watchPeriod = 2 * time.Millisecond
	idlePeriod  = 20 * time.Millisecond
)

// begin and end mark a call's run: calls are one at a time.
func (w *watchdog) begin() {
	w.calls.Add(1)
	w.busy.Store(true)
}

func (w *watchdog) end() { w.busy.Store(false) }

// run watches, for the life of the process.
func (w *watchdog) run() {
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/stacks:bytes"},
		{Name: "/sched/goroutines:goroutines"},
	}
	var call uint64
	var start time.Duration // the process's CPU time as call was first seen
	counted := false
	for {
		period := idlePeriod
		if w.busy.Load() {
			if n := w.calls.Load(); n != call {
				// The call's CPU time is counted from when it is first
				// seen: an idlePeriod at most goes uncounted, against
				// limits of seconds.
				call = n
				start, counted = processCPU()
			}
			w.look(samples, start, counted)
			period = watchPeriod
		}
		time.Sleep(period)
	}
}

// look ends the process if the script went past a limit; start is the
// process's CPU time as the call began, if counted.
func (w *watchdog) look(samples []metrics.Sample, start time.Duration, counted bool) {
	metrics.Read(samples)
	heap := int64(samples[0].Value.Uint64() + samples[1].Value.Uint64())
	if heap > w.mem {
		fatal(fmt.Sprintf("the script used more than %d MiB of memory (the limit)", w.mem>>20))
	}
	if g := samples[2].Value.Uint64(); g > maxGoroutines {
		fatal(fmt.Sprintf("the script started more than %d goroutines (the limit)", maxGoroutines))
	}
	if w.cpu > 0 && counted {
		if used, ok := processCPU(); ok && used-start > w.cpu {
			fatal(fmt.Sprintf("the script used more than %v of CPU time (the limit)", w.cpu))
		}
	}
}
