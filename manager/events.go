package manager

import (
	"sync"

	"github.com/troupe-dev/troupe/agenttypes"
	"sync/atomic"
	"time"
)

// EventKind names what an Event reports.
type EventKind string

// The kinds of event.
const (
	EventSpawned   EventKind = "spawned"
	EventState     EventKind = "state"
	EventModelCall EventKind = "model_call"
	// EventModelDelta carries text as the model streams it (Config.Stream);
	// it goes to subscribers only, not to transcripts, which get the whole
	// text in EventModelCall.
	EventModelDelta EventKind = "model_delta"
	EventToolCall   EventKind = "tool_call"
	EventToolResult EventKind = "tool_result"
	EventNote       EventKind = "note"
	// EventProgress is what a type's own loop says it is doing (Text).
	EventProgress EventKind = "progress"
	// EventBudgetExceeded says a final answer took the run past its token
	// budget; the answer is kept and the run completes.
	EventBudgetExceeded EventKind = "budget_exceeded"
	// EventQuestion carries a child's ask_parent question (Text) on the
	// child; EventAnswer the answer (Text) and who gave it (Tool: handler,
	// parent, user, or none).
	EventQuestion EventKind = "question"
	EventAnswer   EventKind = "answer"
	// EventGroupDone is published on the parent when every child of one of
	// its groups has ended; Group names it.
	EventGroupDone EventKind = "group_done"
	// EventDropped takes the place of events a subscriber fell too far
	// behind to be given; Dropped counts them. Transcripts and OnComplete
	// callbacks never lose events.
	EventDropped   EventKind = "dropped"
	EventCompleted EventKind = "completed"
	// EventSettled follows EventCompleted on an agent whose children
	// outlived its end (Result.Unsettled), once they have all ended; Usage
	// is then the final usage of the agent and its subtree.
	EventSettled EventKind = "settled"
)

// Event is one thing that happened to one agent.
type Event struct {
	// Seq increases by one for every event the manager publishes.
	Seq      uint64    `json:"seq"`
	Time     time.Time `json:"time"`
	Kind     EventKind `json:"kind"`
	AgentID  string    `json:"agent"`
	ParentID string    `json:"parent,omitempty"`
	Type     string    `json:"type"`
	// Label is the agent's label, Group the group it was spawned in, and
	// Depth its depth in the tree (0 for a top-level agent).
	Label string `json:"label,omitempty"`
	Group string `json:"group,omitempty"`
	Depth int    `json:"depth,omitempty"`
	// State is the new state (EventState, EventCompleted) or the first
	// (EventSpawned); From the old one. Other events leave both zero, and
	// they are left out of the JSON.
	State State `json:"state,omitzero"`
	From  State `json:"from,omitzero"`
	// Turn is the model call the event belongs to, counting from 1.
	Turn int `json:"turn,omitempty"`
	// Tool, ToolCallID and Args describe a tool call; Args is the JSON the
	// model sent.
	Tool       string `json:"tool,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	Args       string `json:"args,omitempty"`
	// Text is the assistant's text (EventModelCall), the tool's output
	// (EventToolResult), a note, or the final output (EventCompleted).
	Text string `json:"text,omitempty"`
	// Size is the length of a tool's output in bytes.
	Size int `json:"size,omitempty"`
	// Error is a tool's error, a refusal, or why the run failed.
	Error string `json:"error,omitempty"`
	// Usage is the tokens of one model call, or of the run on completion.
	Usage Usage `json:"usage"`
	// Reason is why the run ended (EventCompleted).
	Reason Reason `json:"reason,omitempty"`
	// Dropped counts the events an EventDropped stands for.
	Dropped int `json:"dropped,omitempty"`
	// Changes are what the agent changed in its workspace
	// (EventCompleted, for an agent that had one).
	Changes *agenttypes.Changes `json:"changes,omitempty"`
}

// Subscription delivers events in publication order. Delivery never blocks
// an agent: events queue up behind a slow reader, up to
// Config.SubscriptionBuffer of them; past that, events are dropped and the
// reader gets one EventDropped counting them where they would have been.
// Read until C closes or call Close.
type Subscription struct {
	c       chan Event
	b       *broadcaster
	mu      sync.Mutex
	queue   []Event
	dropped int    // events dropped since the queue was last taken
	lastSeq uint64 // Seq of the last dropped event
	wake    chan struct{}
	quit    chan struct{}
	closed  bool
	done    chan struct{}
}

// C returns the channel events arrive on. It is closed after Close, or
// after the manager is closed and every queued event was delivered.
func (s *Subscription) C() <-chan Event { return s.c }

// Close stops delivery and closes C. Events still queued are dropped.
func (s *Subscription) Close() {
	s.b.remove(s)
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.quit)
	}
	s.mu.Unlock()
	<-s.done
}

func (s *Subscription) push(e Event) {
	s.mu.Lock()
	switch {
	case s.closed:
	case len(s.queue) >= s.b.buffer || s.dropped > 0:
		// Once dropping, keep dropping until the reader has taken the
		// queue, so the marker stands exactly where the gap is.
		s.dropped++
		s.lastSeq = e.Seq
	default:
		s.queue = append(s.queue, e)
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// pump moves queued events to C. drain is closed when no more events will
// be pushed; pump then delivers what is queued and stops.
func (s *Subscription) pump(drain <-chan struct{}) {
	defer close(s.done)
	defer close(s.c)
	var batch []Event
	for {
		s.mu.Lock()
		batch, s.queue = s.queue, batch[:0]
		if s.dropped > 0 {
			batch = append(batch, Event{Seq: s.lastSeq, Time: time.Now(), Kind: EventDropped, Dropped: s.dropped})
			s.dropped = 0
		}
		s.mu.Unlock()
		for _, e := range batch {
			select {
			case s.c <- e:
			case <-s.quit:
				return
			}
		}
		if len(batch) > 0 {
			clear(batch)
			continue
		}
		select {
		case <-s.wake:
		case <-s.quit:
			return
		case <-drain:
			s.mu.Lock()
			empty := len(s.queue) == 0 && s.dropped == 0
			s.mu.Unlock()
			if empty {
				return
			}
		}
	}
}

// broadcaster fans events out to subscriptions.
type broadcaster struct {
	buffer int // events one subscription may hold
	seq    atomic.Uint64
	count  atomic.Int32
	mu     sync.RWMutex
	subs   map[*Subscription]struct{}
	drain  chan struct{}
	shut   bool
}

func newBroadcaster(buffer int) *broadcaster {
	return &broadcaster{buffer: buffer, subs: map[*Subscription]struct{}{}, drain: make(chan struct{})}
}

func (b *broadcaster) active() bool { return b.count.Load() > 0 }

func (b *broadcaster) subscribe() *Subscription {
	s := &Subscription{
		c:    make(chan Event, 64),
		b:    b,
		wake: make(chan struct{}, 1),
		quit: make(chan struct{}),
		done: make(chan struct{}),
	}
	b.mu.Lock()
	if b.shut {
		b.mu.Unlock()
		close(s.c)
		close(s.done)
		s.closed = true
		return s
	}
	b.subs[s] = struct{}{}
	b.count.Add(1)
	b.mu.Unlock()
	go s.pump(b.drain)
	return s
}

func (b *broadcaster) remove(s *Subscription) {
	b.mu.Lock()
	if _, ok := b.subs[s]; ok {
		delete(b.subs, s)
		b.count.Add(-1)
	}
	b.mu.Unlock()
}

// publish stamps e and delivers it to every subscription. Numbering and
// queueing happen under one lock, so every subscription sees Seq rise.
func (b *broadcaster) publish(e *Event) {
	b.mu.Lock()
	e.Seq = b.seq.Add(1)
	for s := range b.subs {
		s.push(*e)
	}
	b.mu.Unlock()
}

// shutdown tells every subscription that no more events will come: each
// delivers what it has queued and then closes its channel.
func (b *broadcaster) shutdown() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.shut {
		b.shut = true
		close(b.drain)
	}
}
