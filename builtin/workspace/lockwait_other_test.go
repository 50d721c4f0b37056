//go:build !linux

package workspace

import "testing"

// waitBlockedOnLock needs /proc/locks to see a blocked waiter: the
// tests that wait for one run on Linux only.
func waitBlockedOnLock(t *testing.T, _ string, _ int, _ <-chan struct{}) {
	t.Helper()
	t.Skip("seeing a process blocked on a lock needs Linux's /proc/locks")
}
