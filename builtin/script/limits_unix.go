//go:build unix

package script

import (
	"os"
	"os/signal"
	"syscall"
)

// setLimits caps the script host's address space, so that one huge
// allocation fails at once rather than after the machine starts to swap.
// The race detector reserves terabytes of address space for its shadow
// memory, so under it only the watchdog guards memory.
func setLimits(mem int64) {
	_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{})
	if raceEnabled {
		return
	}
	as := uint64(mem) + addressHeadroom
	_ = syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: as, Max: as})
}

// addressHeadroom is address space beyond the memory limit for the Go
// runtime's own reservations (about 1.5 GiB at start), thread stacks and
// the binary. The watchdog holds the heap to the memory limit; this cap
// stops a single allocation of gigabytes before it is made.
const addressHeadroom = 4 << 30

// onCPULimit calls fn when the kernel says the process has used its CPU
// time (SIGXCPU), which a Go program otherwise ignores.
func onCPULimit(fn func()) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGXCPU)
	go func() {
		<-c
		fn()
	}()
}

// limitCPU lets the process use seconds more of CPU time before the
// kernel ends it with SIGXCPU, or lifts the limit when seconds is 0. Only
// the soft limit moves: the hard one stays, so it can be raised again.
func limitCPU(seconds int) {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_CPU, &lim) != nil {
		return
	}
	lim.Cur = lim.Max
	if seconds > 0 {
		var ru syscall.Rusage
		if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
			return
		}
		used := uint64(ru.Utime.Sec + ru.Stime.Sec + 1)
		if want := used + uint64(seconds); want < lim.Max {
			lim.Cur = want
		}
	}
	_ = syscall.Setrlimit(syscall.RLIMIT_CPU, &lim)
}
