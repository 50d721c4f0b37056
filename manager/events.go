package manager

import (
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/troupe-dev/troupe/agenttypes"
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
// an agent: events wait for a slow reader in a ring the manager's
// subscriptions share, which holds the last Config.SubscriptionBuffer of
// them; a reader that falls further behind loses the oldest, and gets one
// EventDropped counting them where they would have been.
//
// Read it through C, a channel, or through Events, an iterator run on the
// reader's own goroutine, which costs less: C's events come through a
// goroutine of the subscription's own, and are copied into the channel
// and out again. Whichever is used first is the subscription's: once
// Events has been used, C's channel delivers nothing and is closed with
// the subscription; once C has been, Events ranges over it. Read until
// the end or call Close.
type Subscription struct {
	c    chan Event
	b    *broadcaster
	wake chan struct{}
	// sleeping is set while the reader waits for an event: only then
	// does a publisher wake it, so a reader keeping up costs publishers
	// no channel operation.
	sleeping atomic.Bool
	quit     chan struct{}
	done     chan struct{} // closed when the pump stops, or at Close with none
	// Guarded by mu: closed, and how the subscription is read: pumping,
	// through C; iterated, through Events; cClosed, that c is closed.
	mu       sync.Mutex
	closed   bool
	pumping  bool
	iterated bool
	cClosed  bool
	// leftAt is the generation of the first list of subscriptions
	// without this one (0 while it is in): events published to it or
	// later are not its.
	leftAt atomic.Uint64
	// reading is held by an Events loop: one reads at a time.
	reading sync.Mutex

	// The reader's own: the Seq it reads next, the events it lost since
	// it last delivered one, and whether it met an event published after
	// the subscription left.
	cursor      uint64
	dropped     int
	lastDropped uint64
	refused     bool
}

// C returns the channel events arrive on. It is closed after Close, or
// after the manager is closed and every event still in the ring was
// delivered (for a subscription read through Events, once a loop has read
// to the end).
func (s *Subscription) C() <-chan Event {
	s.mu.Lock()
	if !s.pumping && !s.iterated && !s.closed {
		s.pumping = true
		go s.pump()
	}
	s.mu.Unlock()
	return s.c
}

// Events returns the subscription's events in publication order, as C
// would deliver them, read from the ring on the goroutine that ranges over
// them. The loop ends once the subscription is closed, or once the manager
// is closed and every event left was delivered. Breaking out of it leaves
// the subscription open, to be read again or closed. One loop reads at a
// time: not from inside another, nor from inside a loop over C.
func (s *Subscription) Events() iter.Seq[Event] {
	return func(yield func(Event) bool) {
		s.mu.Lock()
		pumping, closed := s.pumping, s.closed
		if !pumping {
			s.iterated = true
		}
		s.mu.Unlock()
		if closed && !pumping {
			return
		}
		deliver := func(e Event) bool {
			select {
			case <-s.quit:
				return false // closed: nothing after Close
			default:
				return yield(e)
			}
		}
		if pumping {
			for e := range s.c {
				if !deliver(e) {
					return
				}
			}
			return
		}
		s.reading.Lock()
		defer s.reading.Unlock()
		if s.read(deliver) {
			s.closeC() // as the pump would have: every event was delivered
		}
	}
}

// closeC closes c, once; closeCLocked, with s.mu held.
func (s *Subscription) closeC() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeCLocked()
}

func (s *Subscription) closeCLocked() {
	if !s.cClosed {
		s.cClosed = true
		close(s.c)
	}
}

// Close stops delivery and closes C. Events not yet delivered are dropped,
// those C held included: none arrives once Close has returned. It may be
// called from inside a loop over Events or C, which then ends.
func (s *Subscription) Close() {
	s.b.remove(s)
	s.mu.Lock()
	pumping := s.pumping
	if !s.closed {
		s.closed = true
		close(s.quit)
		if !pumping {
			s.closeCLocked()
			close(s.done)
		}
	}
	s.mu.Unlock()
	if pumping {
		<-s.done // the pump closed c as it stopped
		for range s.c {
		}
	}
}

// pump moves events from the ring to C, in Seq order, until the
// subscription is closed, or the manager is and it has delivered what the
// ring holds for it.
func (s *Subscription) pump() {
	defer close(s.done)
	defer s.closeC()
	s.read(func(e Event) bool {
		select {
		case s.c <- e:
			return true
		case <-s.quit:
			return false
		}
	})
}

// read hands deliver the subscription's events in Seq order until it
// returns false, the subscription is closed, or no more events will be
// published (the broadcaster's drain is closed) and it has handed over
// every one the ring holds for it: then it reports true.
func (s *Subscription) read(deliver func(Event) bool) (drained bool) {
	drain := s.b.drain
	for {
		if e, ok := s.next(); ok {
			if !deliver(e) {
				return false
			}
			continue
		}
		if s.refused {
			// It left: Close is under way, and what the ring holds from
			// here is not its.
			<-s.quit
			return false
		}
		select {
		case <-s.quit:
			return false
		default:
		}
		if drain == nil && s.cursor > s.b.seq.Load() {
			return true // every event numbered was delivered or counted
		}
		s.sleeping.Store(true)
		if s.b.published(s.cursor) {
			s.sleeping.Store(false) // a token a publisher sent meanwhile only wakes us once more
			continue
		}
		select {
		case <-s.wake:
		case <-s.quit:
			return false
		case <-drain:
			drain = nil // no more events come but those numbered already
			s.sleeping.Store(false)
		}
	}
}

// next takes the event at the cursor from the ring, or the marker of the
// events lost before it; false when it has not been published yet.
func (s *Subscription) next() (Event, bool) {
	r := s.b.ring.Load()
	n := uint64(len(r.slots))
	for {
		sl := &r.slots[s.cursor%n]
		sl.mu.Lock()
		switch {
		case sl.seq == s.cursor && s.dropped == 0:
			if left := s.leftAt.Load(); left != 0 && sl.gen >= left {
				// Published after s left (Close): it is not counted in
				// left, and its read would let go of the event before
				// another subscription read it. s reads no further: it
				// is leaving.
				sl.mu.Unlock()
				s.refused = true
				return Event{}, false
			}
			e := sl.e
			if sl.left--; sl.left == 0 {
				sl.e = Event{} // read by every subscription: let go of its text
			}
			sl.mu.Unlock()
			s.cursor++
			return e, true
		case sl.seq > s.cursor:
			// Overwritten: this reader fell a whole ring behind. It goes
			// on from the oldest event the ring may still hold.
			sl.mu.Unlock()
			from := max(s.cursor+1, s.b.seq.Load()-n+1)
			s.dropped += int(from - s.cursor)
			s.lastDropped = from - 1
			s.cursor = from
			continue
		}
		sl.mu.Unlock()
		if s.dropped == 0 {
			return Event{}, false
		}
		e := Event{Seq: s.lastDropped, Time: time.Now(), Kind: EventDropped, Dropped: s.dropped}
		s.dropped = 0
		return e, true
	}
}

// broadcaster numbers events and fans them out to subscriptions. Events
// go into one ring, each in the slot its Seq names, under that slot's
// lock only; each subscription reads the ring in Seq order at its own
// pace. So publishers never wait on each other nor on a subscriber, and
// an event costs one copy whatever the number of subscriptions.
type broadcaster struct {
	buffer int                       // the ring's size: events a subscription may fall behind by
	subs   atomic.Pointer[subList]   // replaced, never changed
	ring   atomic.Pointer[eventRing] // made at the first subscription
	mu     sync.Mutex                // guards changes to subs, and shut
	drain  chan struct{}
	shut   bool
	// seq, taken by every event, apart from what publishers and pumps
	// only read: its cache line goes from core to core at every event.
	_   [64]byte
	seq atomic.Uint64
	_   [56]byte
}

type eventRing struct{ slots []eventSlot }

// subList is the subscriptions events are published to. Each change
// makes a new list, of the next generation.
type subList struct {
	gen  uint64
	subs []*Subscription
}

// eventSlot holds the event whose Seq is seq (0: none); gen is the
// generation of the subscriptions it was published to, and left how many
// of them have yet to read it, so the last one clears it.
type eventSlot struct {
	mu   sync.Mutex
	seq  uint64
	gen  uint64
	left int
	e    Event
}

func newBroadcaster(buffer int) *broadcaster {
	return &broadcaster{buffer: buffer, drain: make(chan struct{})}
}

func (b *broadcaster) active() bool {
	p := b.subs.Load()
	return p != nil && len(p.subs) > 0
}

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
		s.closed, s.cClosed = true, true
		return s
	}
	if b.ring.Load() == nil {
		b.ring.Store(&eventRing{slots: make([]eventSlot, b.buffer)})
	}
	gen, subs := b.list()
	b.subs.Store(&subList{gen: gen + 1, subs: append(subs, s)})
	// Numbered after it joined: a publisher that takes a later Seq sees
	// it among the subscriptions.
	s.cursor = b.seq.Load() + 1
	b.mu.Unlock()
	return s
}

// list returns the subscriptions' generation and a copy of them, for the
// next list; b.mu is held.
func (b *broadcaster) list() (gen uint64, subs []*Subscription) {
	if p := b.subs.Load(); p != nil {
		return p.gen, slices.Clone(p.subs)
	}
	return 0, nil
}

func (b *broadcaster) remove(s *Subscription) {
	b.mu.Lock()
	defer b.mu.Unlock()
	gen, subs := b.list()
	i := slices.Index(subs, s)
	if i < 0 {
		return
	}
	// Before the list without it is published: a reader that finds an
	// event published to that list knows it is not its.
	s.leftAt.Store(gen + 1)
	subs = slices.Delete(subs, i, i+1)
	b.subs.Store(&subList{gen: gen + 1, subs: subs})
	if len(subs) > 0 {
		return
	}
	// Nobody reads the ring any more, and with nobody subscribed nothing
	// is published into it to take the slots over: let go of the events
	// the last subscriptions had not read, so their text is not kept for
	// the manager's life. (A slot's left count may also be one too many
	// for a subscription that joined while its event was on its way; this
	// is where such a slot is let go of.)
	if r := b.ring.Load(); r != nil {
		for i := range r.slots {
			sl := &r.slots[i]
			sl.mu.Lock()
			sl.seq, sl.gen, sl.e, sl.left = 0, 0, Event{}, 0
			sl.mu.Unlock()
		}
	}
}

// publish numbers e and puts it in the ring for the subscriptions, waking
// those that wait for it. An agent numbers its events and hands them over
// under its own lock, so its events are in Seq order everywhere.
func (b *broadcaster) publish(e *Event) {
	e.Seq = b.seq.Add(1)
	p := b.subs.Load()
	if p == nil || len(p.subs) == 0 {
		return
	}
	subs := p.subs
	r := b.ring.Load()
	sl := &r.slots[e.Seq%uint64(len(r.slots))]
	sl.mu.Lock()
	if sl.seq < e.Seq { // else a later event took the slot while this one was on its way
		sl.seq, sl.gen, sl.left, sl.e = e.Seq, p.gen, len(subs), *e
	}
	sl.mu.Unlock()
	for _, s := range subs {
		if s.sleeping.Load() && s.sleeping.CompareAndSwap(true, false) {
			select {
			case s.wake <- struct{}{}:
			default:
			}
		}
	}
}

// published reports whether the event numbered seq is in the ring, or
// was overwritten by a later one.
func (b *broadcaster) published(seq uint64) bool {
	r := b.ring.Load()
	sl := &r.slots[seq%uint64(len(r.slots))]
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return sl.seq >= seq
}

// shutdown tells every subscription that no more events will come: each
// delivers what the ring holds for it and then closes its channel.
func (b *broadcaster) shutdown() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.shut {
		b.shut = true
		close(b.drain)
	}
}
