package manager

import "time"

// Agents run on goroutines the manager keeps for a moment after their
// agent ended, for the next agent to start on. A new goroutine's stack
// starts at a few KiB and is copied to a larger one, more than once, as
// the loop goes down through its frames: at every agent, a cost of the
// order of a step's. A kept goroutine's stack has grown already. (The
// helpers that run a turn's tool calls beside its agent are not kept:
// their stacks stay small, and the runtime reuses those by itself.)

// runnerIdle is how long a goroutine that ran an agent waits for another
// before it ends.
const runnerIdle = 200 * time.Millisecond

// goRun runs a on a goroutine: an idle runner's if one is waiting, else
// a new one, which stays a runner once a has ended.
func (m *Manager) goRun(a *Agent) {
	select {
	case m.handoff <- a:
	default:
		go m.runner(a)
	}
}

// runner runs a, then the agents handed to it, until none comes for
// m.runnerIdle (runnerIdle but in tests) or the manager closes.
func (m *Manager) runner(a *Agent) {
	var idle *time.Timer
	for {
		a.run()
		a = nil // an ended agent is not kept alive by its runner
		if idle == nil {
			idle = time.NewTimer(m.runnerIdle)
		} else {
			idle.Reset(m.runnerIdle)
		}
		select {
		case a = <-m.handoff:
		case <-idle.C:
			return
		case <-m.base.Done():
			idle.Stop()
			return
		}
	}
}
