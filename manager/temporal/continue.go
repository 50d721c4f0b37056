package temporal

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager/stepwire"
)

// A long run goes on in a new workflow run (ContinueAsNew) when its
// history has grown long, between two turns and with no background
// children running: the conversation, the budgets and what the subtree
// spent are carried over, and the time budget still counts from the
// first run's start. Each model call sends the whole conversation, so a
// history grows with the square of a run's turns.

// carried is what a workflow run carries into the next.
type carried struct {
	Started               time.Time
	Messages              []stepwire.Message
	Own                   agenttypes.Usage
	Calls, Spawned, Asked int
	Model                 string
	// Groups are the background groups of the runs before, all ended:
	// collect still reads them.
	Groups []carriedGroup `json:",omitempty"`
	// EndedKids are the children that have ended, which a task may resume.
	EndedKids []string `json:",omitempty"`
	// Kids are the children it spawned, for merge to find.
	Kids []kidRecord `json:",omitempty"`
}

// carriedGroup is an ended background group, as collect reads it.
type carriedGroup struct {
	ID      string
	Results []agenttypes.ChildResult
}

// defaultHistoryEvents is the history length past which a run goes on in
// a new workflow run, well before the server's warnings (10,240 events,
// 10 MB) whatever the server suggests first.
const defaultHistoryEvents = 4096

// historyLong reports whether the run should go on in a new workflow
// run: the history is long, by the server's say or the run's limits, and
// no child is running (they belong to this workflow run).
func (r *agentRun) historyLong(ctx workflow.Context) bool {
	if r.runningGroups() > 0 || r.turnsHere == 0 { // each workflow run makes progress
		return false
	}
	info := workflow.GetInfo(ctx)
	limit := r.in.Limits.HistoryEvents
	if limit <= 0 {
		limit = defaultHistoryEvents
	}
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > limit
}

// carry is the input of the next workflow run.
func (r *agentRun) carry(ctx workflow.Context) *agentInput {
	next := r.in
	next.Agent = r.sa
	next.Carried = &carried{Started: r.started, Messages: r.msgs, Own: r.own,
		Calls: r.calls, Spawned: r.spawned, Asked: r.asked, Model: r.model, EndedKids: r.endedKids, Kids: r.kids}
	for _, g := range r.groups { // all done: no group runs at a carry
		cg := carriedGroup{ID: g.id}
		for _, k := range g.kids {
			cg.Results = append(cg.Results, k.result())
		}
		next.Carried.Groups = append(next.Carried.Groups, cg)
	}
	return &next
}

// restore takes up a run where the workflow run before it left it.
func (r *agentRun) restore(c *carried) {
	r.started, r.msgs, r.own = c.Started, c.Messages, c.Own
	r.calls, r.spawned, r.asked, r.model, r.endedKids, r.kids = c.Calls, c.Spawned, c.Asked, c.Model, c.EndedKids, c.Kids
	for _, cg := range c.Groups {
		g := &group{id: cg.ID, done: true, cancel: func() {}}
		for _, res := range cg.Results {
			g.kids = append(g.kids, &child{id: res.ID, final: &res, ended: true, started: true})
		}
		r.groups = append(r.groups, g)
	}
}
