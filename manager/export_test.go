package manager

import "time"

// SetupCount is how many type setups the manager keeps, for tests.
func (m *Manager) SetupCount() int {
	n := 0
	m.setups.Range(func(any, any) bool { n++; return true })
	return n
}

// SlotState reports the slot bookkeeping: the running counter, how many
// known agents hold a slot, which terminal agents hold one, and the
// lengths of the queue and the resumers list.
type SlotState struct {
	Running, Holders, Queue, Resumers, Lent int
	TerminalHolders                         []string
}

func (m *Manager) Slots() SlotState {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := SlotState{Running: m.running, Queue: m.queue.n, Resumers: m.resumers.Len()}
	for _, a := range m.knownAgents() {
		if a.slot.Load() {
			s.Holders++
			a.mu.Lock()
			if a.state.Terminal() {
				s.TerminalHolders = append(s.TerminalHolders, a.id+" "+a.state.String())
			}
			a.mu.Unlock()
		}
		s.Lent += a.lent
	}
	return s
}

// WaitsLen is how many lent-slot waits are registered on the agent.
func (a *Agent) WaitsLen() int {
	a.m.mu.Lock()
	defer a.m.mu.Unlock()
	return len(a.waits)
}

// SetClock makes the manager built from c read the time from now.
func SetClock(c *Config, now func() time.Time) { c.now = now }

// KeepRunnersFor makes the goroutines that ran m's agents wait d for the
// next before they end, in place of runnerIdle; before m runs an agent.
func (m *Manager) KeepRunnersFor(d time.Duration) { m.runnerIdle = d }

// StartToolHelpersAfter makes m's agents start a turn's tool helpers
// after d, in place of helperDelay; before m runs an agent.
func (m *Manager) StartToolHelpersAfter(d time.Duration) { m.helperDelay = d }

// ConversationSize is the length and capacity of the agent's
// conversation as its loop last left it.
func (a *Agent) ConversationSize() (n, room int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.history), cap(a.history)
}
