package manager

import "testing"

// A start of a turn's helpers takes the turn, so that a start that came
// late for the turn before, and the turn's own, cannot both help it: it
// would run twice ToolConcurrency's helpers.
func TestAStartOfATurnsHelpersTakesTheTurn(t *testing.T) {
	var s toolScratch
	s.batch.Store(&toolBatch{helpers: 1}) // no calls: help returns at once
	s.helpTurn()
	if b := s.batch.Load(); b != nil {
		t.Fatal("the turn was left to be helped again")
	}
}
