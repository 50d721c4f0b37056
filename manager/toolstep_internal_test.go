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

// A turn's batch is the next turn's only when no helper took it: a helper
// that did may still hold it, about to find nothing left to take, and
// would take the next turn's calls. Nor is the batch of a turn whose
// calls did not all run (one panicked) kept.
func TestATurnsBatchIsReusedOnlyWhenNoHelperTookIt(t *testing.T) {
	var s toolScratch
	b := s.takeBatch()
	s.batch.Store(b) // as helpLater publishes it
	s.endTurn(b, true)
	if s.batch.Load() != nil {
		t.Fatal("an ended turn's batch is still there for helpers to take")
	}
	if next := s.takeBatch(); next != b {
		t.Fatal("a batch no helper took was not reused")
	}

	b = s.takeBatch()
	b.helpers = 1
	s.batch.Store(b)
	s.helpTurn() // a helper takes the turn (it has no calls: it returns at once)
	s.endTurn(b, true)
	if next := s.takeBatch(); next == b {
		t.Fatal("a batch a helper took was reused")
	}

	b = s.takeBatch()
	s.batch.Store(b)
	s.endTurn(b, false)
	if s.batch.Load() != nil {
		t.Fatal("the batch of a turn that did not finish is still there for helpers to take")
	}
	if next := s.takeBatch(); next == b {
		t.Fatal("the batch of a turn that did not finish was reused")
	}
}
