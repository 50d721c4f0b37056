package script

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
)

// watchdog holds a script host process to its limits while a call runs:
// memory, goroutines and the call's CPU time, which it ends the process
// for, saying why on standard error for the host to report.
//
// It looks every watchPeriod while a call runs, and every idlePeriod
// while none does: nothing of a script runs between calls, and each
// call's memory and CPU time are checked once it returns too
// (server.handle), so a call that ends before the first look is held to
// its limits all the same. A process that
// wakes every few milliseconds whatever it does answers each call later:
// the script hook's round trip took about 115 µs at the median when the
// watchdog woke every 2 ms, and about 92 µs when it woke every 20 ms,
// measured side by side. A call that runs away is seen within an
// idlePeriod, so what it allocates past the limit stays bounded by what
// it can allocate in that time; its CPU time is counted from its start.
//
// The kernel could count the CPU time itself (RLIMIT_CPU, SIGXCPU), but a
// process with a CPU-time limit set answered each call about 15 µs later,
// measured; the watchdog reads the kernel's count instead. It cannot be
// starved by the script: the runtime preempts goroutines that do not
// yield, and the host's per-call wall-time limit stands behind it.
type watchdog struct {
	mem int64         // bytes of heap and stacks
	cpu time.Duration // CPU time of one call; 0: no limit

	busy  atomic.Bool  // a call runs
	start atomic.Int64 // the process's CPU time as the call began, in ns; -1: not counted
}

// How often the watchdog looks while a call runs, and while none does.
const (
	watchPeriod = 2 * time.Millisecond
	idlePeriod  = 20 * time.Millisecond
)

// begin and end mark a call's run: calls are one at a time.
func (w *watchdog) begin() {
	start := time.Duration(-1)
	if w.cpu > 0 {
		if used, ok := processCPU(); ok {
			start = used
		}
	}
	w.start.Store(int64(start))
	w.busy.Store(true)
}

func (w *watchdog) end() { w.busy.Store(false) }

// overCPU reports whether the call in progress, or the one that just
// ended, has used more than its CPU time: a call checked as it ends as
// well, since it may end before the watchdog first looks at it.
func (w *watchdog) overCPU() bool {
	start := time.Duration(w.start.Load())
	if w.cpu <= 0 || start < 0 {
		return false
	}
	used, ok := processCPU()
	return ok && used-start > w.cpu
}

// cpuFailure is how a call that used its CPU time is reported.
func (w *watchdog) cpuFailure() string {
	return fmt.Sprintf("the script used more than %v of CPU time (the limit)", w.cpu)
}

// run watches, for the life of the process.
func (w *watchdog) run() {
	for {
		period := idlePeriod
		if w.busy.Load() {
			w.look()
			period = watchPeriod
		}
		time.Sleep(period)
	}
}

// look ends the process if the script went past a limit.
func (w *watchdog) look() {
	if heapBytes() > w.mem {
		fatal(fmt.Sprintf("the script used more than %d MiB of memory (the limit)", w.mem>>20))
	}
	if runtime.NumGoroutine() > maxGoroutines {
		fatal(fmt.Sprintf("the script started more than %d goroutines (the limit)", maxGoroutines))
	}
	if w.overCPU() {
		fatal(w.cpuFailure())
	}
}
