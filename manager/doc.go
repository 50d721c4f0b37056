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
//
// Agents form trees: a child's context derives from its parent's, its
// budgets are clamped to what its ancestors have left and its spending is
// charged to them, and ending a parent ends its subtree. A parent ends
// after its children: its end cancels them and waits for them (up to two
// seconds, for a child held up by a tool that ignores its context), so its
// Result's Usage holds everything its subtree spent and its children's
// events come before its own end. An agent's tools
// reach the tree (delegate, collect, ask the parent) through
// agenttypes.Tree; a type may bring its own loop (agenttypes.Loop), which
// spends through the same budgets.
//
// With Config.TranscriptDir set, the manager writes every event of its
// agents to one append-only JSON-lines file (TranscriptPath), from one
// writer goroutine: an agent never writes to the disk itself. After a crash or a
// SIGKILL every line on disk is whole (a last line may be cut short, and
// ReadTranscript skips it), each agent's events are in Seq order, and only
// the most recent events can be missing: at most 1 MiB of them, which on
// an idle machine is the last few milliseconds; agents wait for the disk
// only when that much is waiting for it. A test kills busy processes, on a
// loaded machine too, and checks each of these. An agent's events are on
// disk when its Done closes, unless the disk stalled: an ending agent
// waits for them at most a second, and leaves nothing waiting behind it.
//
// With Config.TracerProvider set, a tree of agents is one OpenTelemetry
// trace in the GenAI conventions' terms: an invoke_agent span per agent,
// from its spawn to its end, with a chat span per model call (tokens,
// finish reason) and an execute_tool span per tool call under it. A
// delegated child's invoke_agent is a child of its parent's delegate
// call, and a tool's context carries its call's span, so a plugin's or a
// tool's own spans join the trace. With Config.MeterProvider set, the
// conventions' token usage and operation duration histograms are
// recorded, with the agents by state, their ends by reason and the
// queue's length. Prompts and completions go on spans only with
// Config.RecordContent. Without a provider there is no telemetry, and no
// cost: each place that would record pays one nil check.
package manager
