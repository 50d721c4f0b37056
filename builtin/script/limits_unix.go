//go:build unix

package script

import (
	"syscall"
	"time"
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

// processCPU is the CPU time the process has used, user and system, as
// the kernel counts it.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
