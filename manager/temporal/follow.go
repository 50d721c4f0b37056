package temporal

import (
	"context"
	"sync"
	"time"

	"github.com/troupe-dev/troupe/manager"
)

// A follower brings a run's events to the client: it asks each agent's
// workflow for its events (QueryEvents) every PollInterval, and learns of
// a child from its parent's spawned event. Queries are not written to a
// workflow's history, so following a run costs its history nothing.

// drainTime bounds how long the follower asks for the last events of a
// run that ended, from agents whose workflows no worker answers for.
const drainTime = 5 * time.Second

type follower struct {
	b       *Backend
	publish func(manager.Event)
	agents  []*followed
}

// followed is one agent's workflow and how far its events were read.
type followed struct {
	id    string
	next  int
	ended bool
}

func newFollower(b *Backend, root string, publish func(manager.Event)) *follower {
	return &follower{b: b, publish: publish, agents: []*followed{{id: root}}}
}

// start follows the run until the returned func is called, and then
// until every agent's last event was read or drainTime has passed.
func (f *follower) start(ctx context.Context) (stop func()) {
	stopping := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(f.b.cfg.PollInterval)
		defer t.Stop()
		var deadline <-chan time.Time
		for {
			if f.poll(ctx) && deadline != nil {
				return
			}
			select {
			case <-t.C:
			case <-stopping:
				stopping = nil
				d := time.NewTimer(drainTime)
				defer d.Stop()
				deadline = d.C
			case <-deadline:
				return
			}
		}
	}()
	return func() { close(stopping); wg.Wait() }
}

// poll reads every agent's new events and reports whether all have
// ended.
func (f *follower) poll(ctx context.Context) bool {
	all := true
	for i := 0; i < len(f.agents); i++ { // agents grows as children appear
		a := f.agents[i]
		if a.ended {
			continue
		}
		f.read(ctx, a)
		all = all && a.ended
	}
	return all
}

// read reads one agent's new events, page by page.
func (f *follower) read(ctx context.Context, a *followed) {
	for range 16 { // a bound on pages per poll, so one agent cannot hold the rest
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		v, err := f.b.cfg.Client.QueryWorkflow(qctx, a.id, "", QueryEvents, a.next)
		cancel()
		if err != nil {
			// Not started yet, or between workers: asked again next time.
			return
		}
		var p eventsPage
		if err := v.Get(&p); err != nil {
			f.b.cfg.Logger.Warn("reading a run's events", "agent", a.id, "err", err)
			return
		}
		if p.Dropped > 0 {
			f.publish(manager.Event{Kind: manager.EventDropped, AgentID: a.id, Dropped: p.Dropped})
		}
		for _, e := range p.Events {
			if e.Kind == manager.EventSpawned && e.AgentID != a.id {
				f.agents = append(f.agents, &followed{id: e.AgentID})
			}
			f.publish(e)
		}
		a.next, a.ended = p.Next, p.Ended
		if a.ended || len(p.Events) == 0 {
			return
		}
	}
}
