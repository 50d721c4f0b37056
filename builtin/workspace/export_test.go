package workspace

import (
	"context"

	"github.com/troupe-dev/troupe/agenttypes"
)

// WaitBlockedOnLock waits until a process is blocked on a lock file.
var WaitBlockedOnLock = waitBlockedOnLock

// RecordClose does what Close does before it removes the worktree.
func RecordClose(ctx context.Context, w *Workspace) (*agenttypes.Changes, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	release, err := w.hold(ctx)
	defer release()
	if err != nil {
		return nil, err
	}
	return w.recordClose(ctx)
}
