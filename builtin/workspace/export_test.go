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

// OpenLock is the lock file of run's agent's durable Opens.
func (p *Provider) OpenLock(run, agent string) string { return p.openLock(run, agent) }
