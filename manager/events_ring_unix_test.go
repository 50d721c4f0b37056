//go:build unix

package manager

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A reader that meets an event published after its subscription left
// waits for Close to finish rather than looking again and again: it
// spends no CPU meanwhile, and returns once Close is done.
func TestALeftReaderWaitsForCloseWithoutSpinning(t *testing.T) {
	b := newBroadcaster(16)
	stays, leaves := b.subscribe(), b.subscribe()
	defer stays.Close()
	b.remove(leaves) // Close's first step, and no further yet
	b.publish(&Event{Kind: EventNote})
	// What the process spends meanwhile without the reader (what other
	// tests left running, the collector) is the baseline.
	before := cpuTime()
	time.Sleep(200 * time.Millisecond)
	idle := cpuTime() - before
	returned := make(chan struct{})
	before = cpuTime()
	go func() {
		defer close(returned)
		leaves.read(func(Event) bool { return true })
	}()
	time.Sleep(200 * time.Millisecond)
	select {
	case <-returned:
		t.Fatal("the reader returned before its subscription was closed")
	default:
	}
	spent := cpuTime() - before
	leaves.Close()
	<-returned
	assert.Less(t, spent, idle+100*time.Millisecond, "CPU spent by a reader waiting 200 ms for Close, beyond %v of the process's own", idle)
}

// cpuTime is the process's CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
