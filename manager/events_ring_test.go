package manager

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// publishAll publishes each publisher's events from its own goroutine, as
// agents do (numbering under the agent's own lock), and returns once all
// are published.
func publishAll(b *broadcaster, publishers, each int) {
	var wg sync.WaitGroup
	for p := range publishers {
		wg.Go(func() {
			var mu sync.Mutex
			for n := range each {
				mu.Lock()
				b.publish(&Event{AgentID: fmt.Sprint("p", p), Turn: n + 1})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// Publishers at once, readers keeping up, through C and through Events:
// every reader gets every event, in Seq order, each publisher's in its
// own order.
func TestRingDeliversEveryEventToEveryReaderInOrder(t *testing.T) {
	const publishers, each, readers = 8, 3000, 4
	b := newBroadcaster(publishers * each) // room for all: nothing may be dropped
	got := make([][]Event, readers)
	var read sync.WaitGroup
	for r := range readers {
		s := b.subscribe()
		read.Go(func() {
			if r%2 == 0 {
				for e := range s.C() {
					got[r] = append(got[r], e)
				}
				return
			}
			for e := range s.Events() {
				got[r] = append(got[r], e)
			}
		})
	}
	publishAll(b, publishers, each)
	b.shutdown()
	read.Wait()
	for r, events := range got {
		require.Len(t, events, publishers*each, "reader %d", r)
		turn := map[string]int{}
		for i, e := range events {
			require.NotEqual(t, EventDropped, e.Kind, "reader %d: nothing dropped", r)
			if i > 0 {
				require.Equal(t, events[i-1].Seq+1, e.Seq, "reader %d: Seq rises by one", r)
			}
			require.Equal(t, turn[e.AgentID]+1, e.Turn, "reader %d: %s's events in its order", r, e.AgentID)
			turn[e.AgentID] = e.Turn
		}
	}
}

// A reader that reads nothing until the end holds up no publisher and no
// other reader: it gets the last events the ring holds, and markers that
// count every event it lost, where it lost them.
func TestRingSlowReaderBlocksNobody(t *testing.T) {
	const publishers, each, buffer = 4, 2000, 16
	b := newBroadcaster(buffer)
	slow := b.subscribe()
	fast := b.subscribe()
	var fastGot, fastLost int
	var read sync.WaitGroup
	read.Go(func() {
		for e := range fast.C() {
			if e.Kind == EventDropped {
				fastLost += e.Dropped
				continue
			}
			fastGot++
		}
	})
	publishAll(b, publishers, each) // returns while slow has read nothing
	b.shutdown()
	read.Wait()
	assert.Equal(t, publishers*each, fastGot+fastLost, "the fast reader gets or is told of every event")

	delivered, lost, markers := 0, 0, 0
	var last uint64
	for e := range slow.C() {
		require.GreaterOrEqual(t, e.Seq, last, "in Seq order around the gaps")
		last = e.Seq
		if e.Kind == EventDropped {
			markers++
			lost += e.Dropped
			continue
		}
		delivered++
	}
	assert.Equal(t, publishers*each, delivered+lost, "every event is delivered or counted")
	assert.LessOrEqual(t, delivered, buffer+cap(slow.c)+1, "a slow reader holds the ring, its channel and one in hand")
	assert.GreaterOrEqual(t, markers, 1)
}

// A slot read by every subscription lets go of its event, so the ring
// keeps no text alive once delivered.
func TestRingLetsGoOfDeliveredEvents(t *testing.T) {
	b := newBroadcaster(8)
	s := b.subscribe()
	b.publish(&Event{AgentID: "a", Text: "a large tool output"})
	e := <-s.C()
	assert.Equal(t, "a large tool output", e.Text)
	s.Close()
	r := b.ring.Load()
	for i := range r.slots {
		assert.Empty(t, r.slots[i].e.Text, "slot %d", i)
	}
}

// A subscription closed while publishers run stops at once and is
// published to no more.
func TestRingCloseWhilePublishing(t *testing.T) {
	b := newBroadcaster(4)
	s := b.subscribe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		publishAll(b, 2, 500)
	}()
	<-s.C()
	s.Close()
	<-done
	assert.False(t, b.active())
	for range s.C() {
	}
}

// TestRingLetsGoOfTextWhenTheLastSubscriptionCloses: a subscription that
// closes before reading what was published leaves nothing behind once no
// subscription is left, when nothing published would take the slots over.
func TestRingLetsGoOfTextWhenTheLastSubscriptionCloses(t *testing.T) {
	b := newBroadcaster(64)
	s := b.subscribe()
	big := strings.Repeat("x", 64<<10)
	for range 64 {
		b.publish(&Event{AgentID: "a", Text: big})
	}
	s.Close()
	for range 1000 {
		b.publish(&Event{AgentID: "a"}) // nobody subscribed: none reaches the ring
	}
	kept := 0
	r := b.ring.Load()
	for i := range r.slots {
		kept += len(r.slots[i].e.Text)
	}
	assert.Zero(t, kept, "bytes of event text the ring keeps with no subscription")
}

// A subscription that left (Close's first step; its reader may still be
// reading) takes no event published after it left: such an event does not
// count it, and its read would let go of the event before the subscription
// that stayed read it, which would then read an empty one.
func TestALeftSubscriptionTakesNoEventFromTheOthers(t *testing.T) {
	b := newBroadcaster(8)
	stays, leaves := b.subscribe(), b.subscribe() // neither read yet: no reader runs
	b.publish(&Event{Kind: EventNote, Text: "before"})
	b.remove(leaves)
	b.publish(&Event{Kind: EventNote, Text: "after"})

	e, ok := leaves.next()
	require.True(t, ok)
	assert.Equal(t, "before", e.Text, "an event published before it left is still its")
	_, ok = leaves.next()
	assert.False(t, ok, "the event published after it left was read by it")

	for _, want := range []string{"before", "after"} {
		e, ok := stays.next()
		require.True(t, ok)
		assert.Equal(t, want, e.Text)
		assert.Equal(t, EventNote, e.Kind)
	}
}

// publishNotes publishes notes of the turns from to to, one by one.
func publishNotes(b *broadcaster, from, to int) {
	for turn := from; turn <= to; turn++ {
		b.publish(&Event{Kind: EventNote, Turn: turn})
	}
}

// An Events loop that closes its subscription ends, and delivers nothing
// after Close; C, used after Events, delivers nothing and is closed.
func TestEventsEndsWhenItsLoopClosesTheSubscription(t *testing.T) {
	b := newBroadcaster(16)
	s := b.subscribe()
	publishNotes(b, 1, 10)
	var got []int
	for e := range s.Events() {
		got = append(got, e.Turn)
		if e.Turn == 3 {
			s.Close()
		}
	}
	assert.Equal(t, []int{1, 2, 3}, got)
	_, open := <-s.C()
	assert.False(t, open, "C after Events and Close is closed")
	for range s.Events() {
		t.Fatal("a closed subscription's Events delivered an event")
	}
}

// Breaking out of an Events loop leaves the subscription open: the next
// loop goes on where the last stopped, and ends once the manager is
// closed and every event was delivered.
func TestEventsGoesOnWhereTheLastLoopStopped(t *testing.T) {
	b := newBroadcaster(16)
	s := b.subscribe()
	publishNotes(b, 1, 5)
	var got []int
	for e := range s.Events() {
		got = append(got, e.Turn)
		if e.Turn == 2 {
			break
		}
	}
	publishNotes(b, 6, 8)
	b.shutdown()
	for e := range s.Events() {
		got = append(got, e.Turn)
	}
	assert.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8}, got)
}

// A subscription read through C first is read through C: Events then
// ranges over its channel.
func TestEventsAfterCRangesOverC(t *testing.T) {
	b := newBroadcaster(16)
	s := b.subscribe()
	c := s.C()
	b.publish(&Event{Kind: EventNote, Turn: 1})
	e := <-c
	assert.Equal(t, 1, e.Turn)
	b.publish(&Event{Kind: EventNote, Turn: 2})
	b.shutdown()
	var got []int
	for e := range s.Events() {
		got = append(got, e.Turn)
	}
	assert.Equal(t, []int{2}, got)
}

// A subscription read through Events to the end, the manager closed, has
// its channel closed too, as C's reader would see it.
func TestCAfterEventsIsClosedOnceEveryEventWasRead(t *testing.T) {
	b := newBroadcaster(16)
	s := b.subscribe()
	b.publish(&Event{Kind: EventNote, Turn: 1})
	b.shutdown()
	n := 0
	for range s.Events() {
		n++
	}
	assert.Equal(t, 1, n)
	select {
	case _, open := <-s.C():
		assert.False(t, open, "C delivered an event Events had delivered")
	case <-time.After(5 * time.Second):
		t.Fatal("C stayed open after Events read every event of a closed manager")
	}
}

// Events over a subscription read through C first ends at Close, from
// inside its loop, though C's channel still holds events.
func TestEventsOverCEndsAtClose(t *testing.T) {
	b := newBroadcaster(16)
	s := b.subscribe()
	c := s.C()
	publishNotes(b, 1, 5)
	for deadline := time.Now().Add(5 * time.Second); len(c) < 5; { // the pump fills the channel
		if time.Now().After(deadline) {
			t.Fatalf("the pump put %d of 5 events in C", len(c))
		}
		time.Sleep(time.Millisecond)
	}
	n := 0
	for range s.Events() {
		n++
		s.Close()
	}
	assert.Equal(t, 1, n, "events delivered after Close")
}

// The ring keeps no closed subscription alive: its slots name the
// subscriptions of an event by generation, not by a list of them.
func TestTheRingKeepsNoClosedSubscription(t *testing.T) {
	b := newBroadcaster(16)
	stays := b.subscribe()
	defer stays.Close()
	gone := b.subscribe()
	for range 10 {
		b.publish(&Event{Kind: EventNote})
	}
	gone.Close()
	p := weak.Make(gone)
	gone = nil
	runtime.GC()
	assert.Nil(t, p.Value(), "a closed subscription is still reachable")
}

// Close drops what C's channel held: a reader of C that closes the
// subscription gets nothing more, however full the channel was.
func TestNothingArrivesOnCAfterClose(t *testing.T) {
	b := newBroadcaster(256)
	s := b.subscribe()
	c := s.C()
	publishNotes(b, 1, 100)
	for deadline := time.Now().Add(5 * time.Second); len(c) < cap(c); {
		if time.Now().After(deadline) {
			t.Fatalf("the pump put %d of %d events in C", len(c), cap(c))
		}
		time.Sleep(time.Millisecond)
	}
	<-c
	s.Close()
	n := 0
	for range c {
		n++
	}
	assert.Zero(t, n, "events that arrived on C after Close returned")
}
