package manager

// SetupCount is how many type setups the manager keeps, for tests.
func (m *Manager) SetupCount() int {
	n := 0
	m.setups.Range(func(any, any) bool { n++; return true })
	return n
}
