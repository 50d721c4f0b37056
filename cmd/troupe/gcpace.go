package main

import (
	"os"
	"runtime"
	"runtime/debug"
)

// startingHeap is how much a command may allocate before its first
// collection. Most commands (version, types list, a run explore on a
// small repository) allocate a few MB and exit: at Go's usual pace the
// collector runs once for them, at 4 MB, which took about a millisecond
// of a 12 ms run explore to free what the exit frees anyway. A command
// that goes on allocating collects once at startingHeap and at the
// usual pace from then on, so a long run's memory is what it was.
const startingHeap = 16 << 20

// paceCollector puts the collector's first goal at startingHeap, unless
// the user set GOGC, and the usual pace back once a collection has run.
// It is the command's choice, not the library's: a program that embeds
// the manager keeps its own pace.
func paceCollector() {
	if os.Getenv("GOGC") != "" { // empty, the runtime reads it as unset too
		return
	}
	// Go's goal for a small heap is 4 MB times GOGC/100.
	usual := debug.SetGCPercent(startingHeap / (4 << 20) * 100)
	// Unreachable from here on, so the first collection frees it and
	// its cleanup runs after it; too large for the tiny allocator, which
	// would keep it alive with its neighbours.
	first := new([32]byte)
	runtime.AddCleanup(first, func(pct int) { debug.SetGCPercent(pct) }, usual)
}
