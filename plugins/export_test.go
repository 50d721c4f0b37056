package plugins

// StartWaiters is how many callers wait on the start of plugin name's
// process that is in flight, or -1 when none is.
func StartWaiters(h *Host, name string) int {
	p := h.proc(name)
	if p == nil {
		return -1
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.starting == nil {
		return -1
	}
	return int(p.starting.waiters.Load())
}

// UsesLane reports whether the running process of plugin name takes its
// tool calls on the lane.
func UsesLane(h *Host, name string) bool {
	p := h.proc(name)
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur != nil && p.cur.lane != nil
}
