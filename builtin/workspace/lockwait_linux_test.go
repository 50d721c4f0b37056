package workspace

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// blockedBound bounds the wait for a waiter to block on a lock.
	blockedBound = time.Minute
	// blockedPoll is how often /proc/locks is read meanwhile.
	blockedPoll = 5 * time.Millisecond
)

// waitBlockedOnLock waits until process pid is blocked waiting for the
// flock of the file at path, as /proc/locks shows it: a line marked
// "->" with pid and the file's device and inode. It fails the test when
// ended closes first (the waiter did not wait) or blockedBound passes.
func waitBlockedOnLock(t *testing.T, path string, pid int, ended <-chan struct{}) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatalf("the lock file: %v", err)
	}
	file := fmt.Sprintf("%02x:%02x:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), st.Ino)
	tick := time.NewTicker(blockedPoll)
	defer tick.Stop()
	bound := time.After(blockedBound)
	for {
		if blockedIn(t, file, pid) {
			return
		}
		select {
		case <-tick.C:
		case <-ended:
			t.Fatalf("the waiter ended without blocking on the lock %s", path)
		case <-bound:
			t.Fatalf("process %d did not block on the lock %s within %s", pid, path, blockedBound)
		}
	}
}

// blockedIn says whether /proc/locks lists pid waiting for a flock of
// file (MAJOR:MINOR:INODE): "N: -> FLOCK ADVISORY WRITE PID FILE 0 EOF".
func blockedIn(t *testing.T, file string, pid int) bool {
	t.Helper()
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Fatalf("reading the kernel's list of locks: %v", err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 7 && f[1] == "->" && f[2] == "FLOCK" && f[5] == strconv.Itoa(pid) && f[6] == file {
			return true
		}
	}
	return false
}
