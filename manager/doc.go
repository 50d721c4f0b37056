// Package manager runs agents.
//
// A Manager spawns agents of a registered type, runs each through its own
// model ↔ tool loop inside hard budgets (tokens, wall time, tool calls,
// turns), and tracks each through a fixed lifecycle:
//
//	pending → running → completed | failed | cancelled
//	pending → cancelled
//
// Terminal states never change. Every transition is timestamped and
// published as an Event, the one stream that feeds progress displays,
// transcripts, OnComplete callbacks and tests.
//
// A Manager has a concurrency limit with a FIFO queue: agents beyond the
// limit wait as pending, and Spawn fails with ErrQueueFull once the queue
// is full. Model calls go through langchaingo's llms.Model with native tool
// calling; the scripted sub-package provides a model that plays back a
// script, for tests.
package manager
