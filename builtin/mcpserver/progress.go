package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/troupe-dev/troupe/manager"
)

// maxProgressMessage bounds one progress notification's message.
const maxProgressMessage = 200

// progressDrain bounds how long a call that ended waits for its last
// events to be sent.
const progressDrain = 2 * time.Second

// forwardProgress sends the client a progress notification for each
// event of agent's tree that says what it is doing, until stop; once the
// agent ended, stop first lets the events up to its completion through,
// so that a client is told how every agent of the tree ended.
func (s *Server) forwardProgress(ctx context.Context, req *mcpsdk.CallToolRequest, agent *manager.Agent, sub *manager.Subscription) (stop func()) {
	token := req.Params.GetProgressToken()
	tree := map[string]bool{agent.ID(): true}
	for _, id := range s.descendants(agent.ID()) {
		tree[id] = true
	}
	var wg sync.WaitGroup
	done := make(chan struct{}) // closed when the agent's completion was forwarded
	wg.Go(func() {
		n := 0
		for e := range sub.C() {
			if e.Kind == manager.EventSpawned && tree[e.ParentID] {
				tree[e.AgentID] = true
			}
			if !tree[e.AgentID] {
				continue
			}
			msg := progressMessage(e, e.AgentID == agent.ID())
			if msg == "" {
				continue
			}
			n++
			err := req.Session.NotifyProgress(ctx, &mcpsdk.ProgressNotificationParams{ProgressToken: token, Progress: float64(n), Message: msg})
			if err != nil && ctx.Err() == nil {
				s.cfg.Logger.Debug("mcp progress not sent", "run", agent.ID(), "err", err)
			}
			if e.Kind == manager.EventCompleted && e.AgentID == agent.ID() {
				close(done)
				return
			}
		}
	})
	return func() {
		select {
		case <-agent.Done():
			t := time.NewTimer(progressDrain)
			select {
			case <-done:
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		default:
		}
		sub.Close()
		wg.Wait()
	}
}

// descendants are the agents below id that the manager knows of.
func (s *Server) descendants(id string) []string {
	var out []string
	for _, c := range s.cfg.Manager.List(manager.Filter{ParentID: id}) {
		out = append(out, c.ID)
		out = append(out, s.descendants(c.ID)...)
	}
	return out
}

// progressMessage is the line a client is shown for e, or "" for an
// event not worth one (state changes, streamed text, notes).
func progressMessage(e manager.Event, root bool) string {
	who := e.Type
	if e.Label != "" {
		who = "[" + e.Label + "] " + e.Type
	}
	var msg string
	switch e.Kind {
	case manager.EventSpawned:
		if root {
			msg = fmt.Sprintf("%s started", who)
		} else {
			msg = fmt.Sprintf("%s subagent started: %s", who, oneLine(e.Text))
		}
	case manager.EventModelCall:
		msg = fmt.Sprintf("%s: turn %d", who, e.Turn)
	case manager.EventToolCall:
		msg = fmt.Sprintf("%s: %s %s", who, e.Tool, oneLine(e.Args))
	case manager.EventProgress:
		msg = fmt.Sprintf("%s: %s", who, oneLine(e.Text))
	case manager.EventQuestion:
		msg = fmt.Sprintf("%s asks: %s", who, oneLine(e.Text))
	case manager.EventCompleted:
		msg = fmt.Sprintf("%s %s (%s)", who, e.State, e.Reason)
	default:
		return ""
	}
	return clip(msg, maxProgressMessage)
}

// oneLine folds s onto one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// clip cuts s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
